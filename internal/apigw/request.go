package apigw

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/oncecall/oncecall/internal/httpapi"
)

// Request is the *http.Request an event stands for, with ctx: the method
// and the path without the stage, the headers as sent (API Gateway joins a
// repeated header's values with commas), the body decoded when it arrived
// base64-encoded (a body that is not valid base64 fails on read), and the
// URL the API was reached at (httpapi.WithBaseURL).
func Request(ctx context.Context, ev events.APIGatewayV2HTTPRequest) *http.Request {
	method, path := route(ev)
	var body io.Reader = strings.NewReader(ev.Body)
	length := int64(len(ev.Body))
	if ev.IsBase64Encoded {
		// Lambda bounds the event to 6 MB; the router reads only what it
		// accepts of the decoded body.
		body, length = base64.NewDecoder(base64.StdEncoding, strings.NewReader(ev.Body)), -1
	}
	u := &url.URL{Path: path, RawQuery: ev.RawQueryString}
	r := &http.Request{
		Method:        method,
		URL:           u,
		RequestURI:    u.RequestURI(),
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        make(http.Header, len(ev.Headers)),
		Body:          io.NopCloser(body),
		ContentLength: length,
		Host:          ev.RequestContext.DomainName,
		RemoteAddr:    ev.RequestContext.HTTP.SourceIP,
	}
	for k, v := range ev.Headers {
		r.Header.Add(k, v)
	}
	if r.Host == "" {
		r.Host = r.Header.Get("Host")
	}
	return r.WithContext(httpapi.WithBaseURL(ctx, baseURL(ev, r.Host)))
}

// route returns the method and the path without the stage prefix: from
// the route key when the event matched one of the template's routes,
// from the request otherwise ($default).
func route(ev events.APIGatewayV2HTTPRequest) (string, string) {
	if m, p, ok := strings.Cut(ev.RouteKey, " "); ok && ev.RouteKey != "$default" {
		return m, p
	}
	path := ev.RawPath
	if st := ev.RequestContext.Stage; st != "" && st != "$default" {
		path = strings.TrimPrefix(path, "/"+st)
	}
	return ev.RequestContext.HTTP.Method, path
}

// baseURL is where the API was reached: https, the domain and the stage.
func baseURL(ev events.APIGatewayV2HTTPRequest, host string) string {
	base := "https://" + host
	if st := ev.RequestContext.Stage; st != "" && st != "$default" {
		base += "/" + st
	}
	return base
}
