package apigw

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/mcp"
	"github.com/oncecall/oncecall/internal/protocol"
)

// Routes served, as API Gateway route keys.
const (
	CallbackRoute  = "POST /callback"
	FunctionsRoute = "GET /functions"
	MCPRoute       = "POST " + mcp.Path
)

// nonceHeader is protocol.NonceHeader as API Gateway passes header names:
// in lower case.
var nonceHeader = strings.ToLower(protocol.NonceHeader)

// EdgeHeader is the header the edge in front of the API (CloudFront)
// adds to every request it forwards, carrying Handler.OriginToken.
const EdgeHeader = "x-oncecall-edge"

// CodeEdgeOnly refuses a request that did not come through the edge.
const CodeEdgeOnly = "edge_only"

// Handler adapts a callback.Handler to API Gateway HTTP API events.
type Handler struct {
	h *callback.Handler
	// PublicURL, when set, is the base URL listings name as the callback;
	// otherwise it is built from the event's domain name and stage.
	PublicURL string
	// MCP serves POST /mcp over the same handler; New gives it one without
	// a bearer token.
	MCP *mcp.Server
	// OriginToken, when set, must be the value of EdgeHeader: a request
	// without it reached the API around the edge (and its rate limit),
	// and is refused 403 before anything else is done.
	OriginToken string
}

// New returns a Handler for h.
func New(h *callback.Handler, publicURL string) *Handler {
	return &Handler{h: h, PublicURL: strings.TrimRight(publicURL, "/"), MCP: mcp.New(h, mcp.Options{})}
}

// Handle serves one event. It never returns an error: every failure is an
// HTTP answer, so API Gateway never substitutes its own.
func (a *Handler) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	if a.OriginToken != "" && subtle.ConstantTimeCompare([]byte(header(ev.Headers, EdgeHeader)), []byte(a.OriginToken)) != 1 {
		return respond(protocol.Refuse(&protocol.Problem{Status: http.StatusForbidden, Code: CodeEdgeOnly,
			Message: "this API is served through its edge only: call the stack's EdgeCallbackUrl and EdgeFunctionSourceUrl"})), nil
	}
	method, path := route(ev)
	switch {
	case method == http.MethodPost && path == "/callback":
		body, ok := decodeBody(ev)
		if !ok {
			return respond(protocol.Refuse(&protocol.Problem{Status: http.StatusBadRequest, Code: protocol.CodeInvalidRequest,
				Message: "the body is marked base64 but is not valid base64"})), nil
		}
		return respond(a.h.Call(ctx, callback.Request{Nonce: header(ev.Headers, nonceHeader), Body: body})), nil
	case (method == http.MethodGet || method == http.MethodHead) && path == "/functions":
		return respond(a.h.List(ctx, header(ev.Headers, nonceHeader), a.callbackURL(ev))), nil
	case method == http.MethodPost && path == mcp.Path:
		body, ok := decodeBody(ev)
		if !ok {
			return respondMCP(a.MCP.Unreadable(ctx, "the body is marked base64 but is not valid base64")), nil
		}
		return respondMCP(a.MCP.Handle(ctx, mcp.Request{Body: body, Header: func(name string) string {
			return header(ev.Headers, strings.ToLower(name))
		}})), nil
	default:
		return respond(protocol.Refuse(&protocol.Problem{Status: http.StatusNotFound, Code: protocol.CodeNoRoute,
			Message: "oncecall serves " + CallbackRoute + ", " + FunctionsRoute + " and " + MCPRoute})), nil
	}
}

// route returns the method and the path without the stage prefix.
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

// header finds name (lower case) among headers of any case.
func header(h map[string]string, name string) string {
	if v, ok := h[name]; ok {
		return v
	}
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

func decodeBody(ev events.APIGatewayV2HTTPRequest) ([]byte, bool) {
	if !ev.IsBase64Encoded {
		return []byte(ev.Body), true
	}
	// Lambda bounds the event to 6 MB, so decoding before Decode checks
	// the size costs bounded memory.
	b, err := base64.StdEncoding.DecodeString(ev.Body)
	return b, err == nil
}

func (a *Handler) callbackURL(ev events.APIGatewayV2HTTPRequest) string {
	if a.PublicURL != "" {
		return a.PublicURL + "/callback"
	}
	base := "https://" + ev.RequestContext.DomainName
	if st := ev.RequestContext.Stage; st != "" && st != "$default" {
		base += "/" + st
	}
	return base + "/callback"
}

func respond(a protocol.Answer) events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{
		StatusCode: a.Status,
		Headers:    map[string]string{"content-type": "application/json", "cache-control": "no-store"},
		Body:       string(a.Body),
	}
}

// respondMCP answers an MCP door response; one without a body is 202
// Accepted, as Streamable HTTP answers notifications.
func respondMCP(res mcp.Response) events.APIGatewayV2HTTPResponse {
	out := events.APIGatewayV2HTTPResponse{StatusCode: res.Status, Headers: map[string]string{"cache-control": "no-store"}}
	for k, v := range res.Header {
		out.Headers[strings.ToLower(k)] = v
	}
	if res.Body != nil {
		out.Headers["content-type"] = "application/json"
		out.Body = string(res.Body)
	}
	return out
}
