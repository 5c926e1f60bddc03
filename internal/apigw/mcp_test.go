package apigw_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/mcp"
)

// mcpEvent is POST /mcp as API Gateway delivers it on a named stage
// through the $default route, the body base64-encoded.
func mcpEvent(body string, headers map[string]string) events.APIGatewayV2HTTPRequest {
	return events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: "/prod/mcp", Headers: headers,
		Body: base64.StdEncoding.EncodeToString([]byte(body)), IsBase64Encoded: true,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			DomainName: "abc123.execute-api.eu-west-1.amazonaws.com", Stage: "prod",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: "/prod/mcp"},
		},
	}
}

// TestMCPDoor: the Lambda serves POST /mcp through the same handler as
// the callback: the token, a notification's 202, and one operation for a
// create through /callback and its retry through /mcp.
func TestMCPDoor(t *testing.T) {
	const token = "lambda-token-0123456789"
	f := newFixture(t, httpapi.Options{MCP: mcp.Options{Token: token}})
	auth := map[string]string{"authorization": "Bearer " + token, "mcp-protocol-version": "2025-11-25",
		"content-type": "application/json", "accept": "application/json, text/event-stream"}
	handle := func(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		res, err := f.gw.Handle(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}

	res := handle(mcpEvent(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]string{}))
	if res.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(res.Headers["www-authenticate"], "Bearer") || strings.Contains(res.Body, "create_ticket") {
		t.Errorf("without the token: %d %v %s", res.StatusCode, res.Headers, res.Body)
	}
	res = handle(mcpEvent(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, auth))
	if res.StatusCode != http.StatusOK || res.Headers["content-type"] != "application/json" || !strings.Contains(res.Body, `"name":"create_ticket"`) {
		t.Errorf("tools/list: %d %v %s", res.StatusCode, res.Headers, res.Body)
	}
	res = handle(mcpEvent(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, auth))
	if res.StatusCode != http.StatusAccepted || res.Body != "" || res.Headers["content-type"] != "" {
		t.Errorf("notification: %d %v %q", res.StatusCode, res.Headers, res.Body)
	}

	first := f.create(t, "user-a", "door-1", `{"title":"Cannot sign in"}`)
	call := `{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":{"name":"create_ticket","arguments":{"title":"Cannot sign in"},` +
		`"_meta":{"_aiv_external_user_id":"user-a","request_id":"door-1"}}}`
	hdr := map[string]string{"x-request-nonce": testNonces(t).Valid}
	for k, v := range auth {
		hdr[k] = v
	}
	res = handle(mcpEvent(call, hdr))
	if res.StatusCode != http.StatusOK || !strings.Contains(res.Body, `"structuredContent":{"status":"created","ticket_id":"`+first["ticket_id"].(string)+`","deduplicated":true}`) {
		t.Errorf("retry through /mcp of %v: %d %s", first, res.StatusCode, res.Body)
	}
	if n := f.env.Count(t, "ticket"); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
	bad := mcpEvent("", auth)
	bad.Body = "%%%not base64"
	if res := handle(bad); res.StatusCode != http.StatusBadRequest || !strings.Contains(res.Body, `"code":-32700`) || !strings.Contains(res.Body, "illegal base64") {
		t.Errorf("bad base64: %d %s", res.StatusCode, res.Body)
	}
	// Another method: the router's 405, as locally.
	res = handle(events.APIGatewayV2HTTPRequest{RouteKey: "GET /mcp"})
	if res.StatusCode != http.StatusMethodNotAllowed || res.Headers["allow"] != http.MethodPost {
		t.Errorf("GET /mcp: %d %v %s", res.StatusCode, res.Headers, res.Body)
	}
}
