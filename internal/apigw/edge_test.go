package apigw_test

import (
	"context"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/httpapi"
)

// TestOnlyThroughTheEdge: with an origin token, a request that lacks the
// edge's header, or carries another value, is refused 403 edge_only
// before anything is looked up or written, even with a valid nonce; one
// that carries it is served.
func TestOnlyThroughTheEdge(t *testing.T) {
	token := strings.Repeat("e", 48)
	f := newFixture(t, httpapi.Options{OriginToken: token})
	body := []byte(`{"type":"tool_call","function":{"name":"create_ticket","content":{"title":"Printer"}},"context":{"externalUserId":"user-a","metadata":{"request_id":"edge-1"}}}`)
	before := f.env.Requests.Load()
	for name, h := range map[string]map[string]string{
		"no edge header":        {"x-request-nonce": testNonces(t).Valid},
		"another value":         {"x-request-nonce": testNonces(t).Valid, httpapi.EdgeHeader: strings.Repeat("f", 48)},
		"the value, truncated":  {"x-request-nonce": testNonces(t).Valid, httpapi.EdgeHeader: token[:47]},
		"the header, empty":     {"x-request-nonce": testNonces(t).Valid, httpapi.EdgeHeader: ""},
		"no nonce, no edge too": {},
	} {
		res, err := f.gw.Handle(context.Background(), event(body, h, false))
		if err != nil {
			t.Fatal(err)
		}
		if res.StatusCode != 403 || !strings.Contains(res.Body, `"`+httpapi.CodeEdgeOnly+`"`) || strings.Contains(res.Body, token) {
			t.Errorf("%s: %d %s, want 403 %s", name, res.StatusCode, res.Body, httpapi.CodeEdgeOnly)
		}
	}
	if n := f.env.Requests.Load() - before; n != 0 {
		t.Fatalf("%d store requests for refused requests, want 0", n)
	}
	res, err := f.gw.Handle(context.Background(), event(body, map[string]string{"x-request-nonce": testNonces(t).Valid, "X-Oncecall-Edge": token}, false))
	if err != nil || res.StatusCode != 200 || !strings.Contains(res.Body, `"created"`) {
		t.Fatalf("through the edge: %d %s, %v", res.StatusCode, res.Body, err)
	}
}
