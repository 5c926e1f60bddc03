package apigw

import (
	"context"
	"net/http"

	"github.com/aws/aws-lambda-go/events"

	"github.com/oncecall/oncecall/internal/httpapi"
)

// Routes the template declares, as API Gateway route keys.
const (
	CallbackRoute  = "POST " + httpapi.CallbackPath
	FunctionsRoute = "GET " + httpapi.FunctionsPath
	MCPRoute       = "POST " + httpapi.MCPPath
)

// Handler adapts API Gateway HTTP API events to an http.Handler.
type Handler struct {
	http.Handler
}

// New returns a Handler serving events with h.
func New(h http.Handler) *Handler { return &Handler{Handler: h} }

// Handle serves one event. It never returns an error: every failure is an
// HTTP answer, so API Gateway never substitutes its own.
func (a *Handler) Handle(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	w := &responseWriter{header: http.Header{}}
	a.ServeHTTP(w, Request(ctx, ev))
	return w.response(), nil
}
