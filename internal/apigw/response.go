package apigw

import (
	"bytes"
	"encoding/base64"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// responseWriter collects what the handler writes for one event.
type responseWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *responseWriter) Header() http.Header { return w.header }

func (w *responseWriter) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *responseWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.body.Write(b)
}

// response is the event's answer: header names in lower case, as API
// Gateway passes them, a repeated header's values joined with commas, and
// a body that is not UTF-8 text base64-encoded.
func (w *responseWriter) response() events.APIGatewayV2HTTPResponse {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	out := events.APIGatewayV2HTTPResponse{StatusCode: w.status, Headers: make(map[string]string, len(w.header))}
	for k, v := range w.header {
		out.Headers[strings.ToLower(k)] = strings.Join(v, ",")
	}
	b := w.body.Bytes()
	if utf8.Valid(b) {
		out.Body = string(b)
	} else {
		out.Body, out.IsBase64Encoded = base64.StdEncoding.EncodeToString(b), true
	}
	return out
}
