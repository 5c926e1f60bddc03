package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/mcp"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/ticket"
)

const (
	// wrongNonce is a BCrypt hash of another key; overCostNonce has cost 11,
	// above the verifier's maximum of 10.
	wrongNonce    = "$2a$09$o7ogBa5RSguwMfUCzAxGLepjb76VqISfggGYzCDEPUOfESLQVqZNa"
	overCostNonce = "$2a$11$4riA5FzJMZ56PefT0wwHXe8V6XBPzKOWjuYsP5zpWrrYTohpYf0NO"
)

func with(m map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(m, kv[i].(string))
			continue
		}
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// TestAnswers plays each row of docs/mcp.md's table: a JSON-RPC error
// (-32001, in an HTTP 200, which clients show their user) for a refused
// credential or user, isError results for what the model can correct,
// and counts what was written.
func TestAnswers(t *testing.T) {
	r := newRig(t, mcp.Options{})
	// One operation per request_id, so that changed arguments are refused.
	r.h.Policies = idempotency.Policies{ticket.CreateName: idempotency.PolicyRequest}
	// A ticket of tenant-a, and one more create under the same request_id.
	first := r.post(callBody(1, "create_ticket", signIn, rawMeta("user-a", "answers-1"))).tool(t)
	if first.IsError {
		t.Fatalf("create: %v", first.Content[0].(*sdk.TextContent).Text)
	}
	ticketID := strings.Split(strings.Split(string(first.StructuredContent.(json.RawMessage)), `"ticket_id":"`)[1], `"`)[0]
	cases := []struct {
		name     string
		function string
		args     any
		meta     map[string]any
		headers  []string
		status   int
		// code is the JSON-RPC error code (HTTP 401/403 and -32602), or
		// says is the isError text's start.
		code int
		says string
	}{
		{"missing nonce", "create_ticket", signIn, with(rawMeta("user-a", "a-2"), "_aiv_nonce", nil), nil, 200, mcp.CodeUnauthorized, "missing_nonce"},
		{"null nonce", "create_ticket", signIn, with(rawMeta("user-a", "a-2"), "_aiv_nonce", "x"), nil, 200, mcp.CodeUnauthorized, "invalid_nonce"},
		{"wrong nonce", "create_ticket", signIn, with(rawMeta("user-a", "a-2"), "_aiv_nonce", wrongNonce), nil, 200, mcp.CodeUnauthorized, "invalid_nonce"},
		{"over-cost nonce", "create_ticket", signIn, with(rawMeta("user-a", "a-2"), "_aiv_nonce", overCostNonce), nil, 200, mcp.CodeUnauthorized, "invalid_nonce"},
		{"nonce in the header", "get_ticket", map[string]any{"ticket_id": ticketID}, with(rawMeta("user-a", ""), "_aiv_nonce", nil), []string{"X-Request-Nonce", validNonce()}, 200, 0, ""},
		{"unknown user", "create_ticket", signIn, rawMeta("nobody", "a-2"), nil, 200, mcp.CodeUnauthorized, "unknown_user"},
		{"disabled user", "create_ticket", signIn, rawMeta("user-d", "a-2"), nil, 200, mcp.CodeUnauthorized, "user_disabled"},
		{"function not granted", "create_ticket", signIn, rawMeta("user-e", "a-2"), nil, 200, mcp.CodeUnauthorized, "function_not_granted"},
		{"another tenant's ticket", "get_ticket", map[string]any{"ticket_id": ticketID}, rawMeta("user-c", ""), nil, 200, 0, "ticket_not_found: "},
		{"missing user", "create_ticket", signIn, rawMeta("", "a-2"), nil, 200, 0, "missing_user: params._meta._aiv_external_user_id is missing"},
		{"missing request_id", "create_ticket", signIn, rawMeta("user-a", ""), nil, 200, 0, "missing_request_id: params._meta.request_id is missing"},
		{"invalid request_id", "create_ticket", signIn, rawMeta("user-a", "has space"), nil, 200, 0, "invalid_request_id: params._meta.request_id must be visible ASCII"},
		{"invalid arguments", "create_ticket", map[string]any{"title": ""}, rawMeta("user-a", "a-2"), nil, 200, 0, "invalid_arguments: Fix the arguments and call again"},
		{"unknown function", "delete_ticket", map[string]any{}, rawMeta("user-a", "a-2"), nil, 200, jsonrpc.CodeInvalidParams, "unknown tool"},
		{"request_id reused", "create_ticket", map[string]any{"title": "Another"}, rawMeta("user-a", "answers-1"), nil, 200, 0, "request_id_reused: This request_id already created ticket " + ticketID},
		{"request_id of another user", "create_ticket", signIn, rawMeta("user-b", "answers-1"), nil, 200, mcp.CodeUnauthorized, "request_id_conflict"},
	}
	for _, c := range cases {
		p := r.post(callBody(2, c.function, c.args, c.meta), c.headers...)
		if p.status != c.status {
			t.Errorf("%s: HTTP %d %s, want %d", c.name, p.status, p.raw, c.status)
			continue
		}
		if c.code == jsonrpc.CodeInvalidParams {
			if p.code() != c.code || !strings.Contains(p.body.Error.Message, c.says) {
				t.Errorf("%s: %s, want error %d %s", c.name, p.raw, c.code, c.says)
			}
			continue
		}
		if c.code != 0 {
			if p.code() != c.code || !strings.Contains(string(p.body.Error.Data), `"code":"`+c.says+`"`) || !strings.HasPrefix(p.body.Error.Message, c.says+": ") {
				t.Errorf("%s: %s, want error %d %s", c.name, p.raw, c.code, c.says)
			}
			if strings.Contains(string(p.raw), ticketID) || strings.Contains(string(p.raw), "tenant-") {
				t.Errorf("%s discloses %s", c.name, p.raw)
			}
			continue
		}
		res := p.tool(t)
		text := res.Content[0].(*sdk.TextContent).Text
		if c.says == "" {
			if res.IsError {
				t.Errorf("%s: isError %s", c.name, text)
			}
			continue
		}
		if !res.IsError || !strings.HasPrefix(text, c.says) || res.StructuredContent != nil {
			t.Errorf("%s: %s, want isError %q", c.name, p.raw, c.says)
		}
	}
	if n, o := r.tickets(), r.operations(); n != 1 || o != 1 {
		t.Errorf("%d tickets and %d operations, want the first create's one each", n, o)
	}
}

// TestDisabledAfterCachedSuccess: a user disabled after a success is
// refused at once, and the replay discloses nothing.
func TestDisabledAfterCachedSuccess(t *testing.T) {
	r := newRig(t, mcp.Options{})
	if res := r.post(callBody(1, "create_ticket", signIn, rawMeta("user-b", "disable-1"))).tool(t); res.IsError {
		t.Fatalf("create: %s", res.Content[0].(*sdk.TextContent).Text)
	}
	u, err := r.store.LoadUser(context.Background(), "user-b")
	if err != nil {
		t.Fatal(err)
	}
	u.Active = false
	if err := r.store.PutUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	for _, rid := range []string{"disable-1", "disable-2"} {
		p := r.post(callBody(2, "create_ticket", signIn, rawMeta("user-b", rid)))
		if p.status != http.StatusOK || p.code() != mcp.CodeUnauthorized || !strings.Contains(string(p.body.Error.Data), "user_disabled") || strings.Contains(string(p.raw), "ticket_id") {
			t.Errorf("%s after disabling: %d %s", rid, p.status, p.raw)
		}
	}
	if n := r.tickets(); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}

// TestHostileMeta: _meta values of the wrong type, names far over the
// limits and reserved prefixes are refused or ignored, never mistaken for
// the application's fields, and nothing is written.
func TestHostileMeta(t *testing.T) {
	r := newRig(t, mcp.Options{})
	huge := strings.Repeat("k", 40<<10)
	cases := []struct {
		name string
		meta map[string]any
		code int
		says string
	}{
		{"numeric user", with(rawMeta("", "h-1"), "_aiv_external_user_id", 42), jsonrpc.CodeInvalidParams, "_aiv_external_user_id must be a string or null"},
		{"object nonce", with(rawMeta("user-a", "h-1"), "_aiv_nonce", map[string]any{"x": 1}), jsonrpc.CodeInvalidParams, "_aiv_nonce must be a string or null"},
		{"numeric request_id", with(rawMeta("user-a", ""), "request_id", 7), jsonrpc.CodeInvalidParams, "request_id must be a string or null"},
		{"array call source", with(rawMeta("user-a", "h-1"), "_aiv_call_source", []any{"x"}), jsonrpc.CodeInvalidParams, "_aiv_call_source must be"},
		{"bad moment", with(rawMeta("user-a", "h-1"), "_aiv_moment", "yesterday"), jsonrpc.CodeInvalidParams, "_aiv_moment must be an ISO 8601"},
		{"long user", with(rawMeta("", "h-1"), "_aiv_external_user_id", strings.Repeat("u", 300)), jsonrpc.CodeInvalidParams, "longer than 256 bytes"},
		{"long request_id value", with(rawMeta("user-a", ""), "request_id", strings.Repeat("r", 5000)), jsonrpc.CodeInvalidParams, "longer than 4096 bytes"},
		{"huge key", with(rawMeta("user-a", "h-1"), huge, "v"), jsonrpc.CodeParseError, "longer than 32768 bytes"},
		{"too many entries", func() map[string]any {
			m := rawMeta("user-a", "h-1")
			for i := range mcp.MaxMetaEntries {
				m[strings.Repeat("m", i+1)] = "v"
			}
			return m
		}(), jsonrpc.CodeInvalidParams, "the limit is 80"},
		// Reserved names are not the application's request_id.
		{"request_id under a reserved prefix", with(rawMeta("user-a", ""), "io.modelcontextprotocol/request_id", "h-2", "dev.mcp/request_id", "h-2", "_aiv_request_id", "h-2"), 0, "missing_request_id"},
	}
	for _, c := range cases {
		p := r.post(callBody(1, "create_ticket", signIn, c.meta))
		if c.code != 0 {
			status := http.StatusOK
			if c.code == jsonrpc.CodeParseError {
				status = http.StatusBadRequest
			}
			if p.status != status || p.code() != c.code || !strings.Contains(p.body.Error.Message, c.says) || len(p.body.Error.Message) > 400 {
				t.Errorf("%s: %d %.300s, want %d %q", c.name, p.status, p.raw, c.code, c.says)
			}
			continue
		}
		if res := p.tool(t); !res.IsError || !strings.HasPrefix(res.Content[0].(*sdk.TextContent).Text, c.says) {
			t.Errorf("%s: %s", c.name, p.raw)
		}
	}
	if n, o := r.tickets(), r.operations(); n+o != 0 {
		t.Errorf("%d tickets and %d operations written", n, o)
	}
	// Other hosts' entries of any type, and reserved ones, are tolerated.
	meta := with(rawMeta("user-a", "h-3"), "progressToken", 5, "io.modelcontextprotocol/clientCapabilities", map[string]any{"x": true},
		"vendor/extra", []any{1, 2}, "tenant_id", "tenant-b")
	if res := r.post(callBody(2, "create_ticket", signIn, meta)).tool(t); res.IsError {
		t.Errorf("tolerated _meta: %s", res.Content[0].(*sdk.TextContent).Text)
	}
	if n := r.tickets(); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}

// TestBearerToken: with a token configured, every request carries it; it
// is compared whole.
func TestBearerToken(t *testing.T) {
	const token = "0123456789abcdef-token"
	r := newRig(t, mcp.Options{Token: token})
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + token + "x", "bearer " + token, token} {
		var h []string
		if auth != "" {
			h = []string{"Authorization", auth}
		}
		for _, body := range []string{`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, `not json`} {
			p := r.post(body, h...)
			if p.status != http.StatusUnauthorized || p.code() != mcp.CodeUnauthorized || !strings.HasPrefix(p.header.Get("WWW-Authenticate"), "Bearer") || strings.Contains(string(p.raw), "create_ticket") {
				t.Errorf("Authorization %q, %s: %d %s", auth, body, p.status, p.raw)
			}
		}
	}
	if _, err := sdk.NewClient(&sdk.Implementation{Name: "x", Version: "1"}, nil).Connect(context.Background(),
		&sdk.StreamableClientTransport{Endpoint: r.srv.URL + mcp.Path, MaxRetries: -1}, nil); err == nil {
		t.Error("a client without the token connected")
	}
	cs := r.connect("2025-11-25", http.Header{"Authorization": {"Bearer " + token}})
	if list, err := cs.ListTools(context.Background(), nil); err != nil || len(list.Tools) != 2 {
		t.Fatalf("with the token: %v %v", list, err)
	}
	createTwice(t, r, cs, "token-1")
}

// TestOneLogLinePerRequest: every request, answered or refused, leaves one
// log line with its outcome, and no line holds the nonce, the arguments,
// the user id or the request id.
func TestOneLogLinePerRequest(t *testing.T) {
	r := newRig(t, mcp.Options{})
	secretTitle := "title-not-for-logs"
	dup := strings.Replace(callBody(10, "create_ticket", map[string]any{"title": "dup-title"}, rawMeta("user-a", "log-rid-2")), `"title":"dup-title"`, `"title":"dup-title","title":"other"`, 1)
	long := callBody(11, "create_ticket", map[string]any{"title": strings.Repeat("x", protocol.MaxStringBytes+1)}, rawMeta("user-a", "log-rid-3"))
	bodies := []struct{ body, outcome, method, code string }{
		{`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}`, "handshake", "initialize", ""},
		{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, "handshake", "notifications/initialized", ""},
		{`{"jsonrpc":"2.0","id":2,"method":"ping"}`, "handshake", "ping", ""},
		{`{"jsonrpc":"2.0","id":3,"method":"tools/list"}`, "listed", "tools/list", ""},
		{`{"jsonrpc":"2.0","id":4,`, "rejected", "", ""},
		{`{"jsonrpc":"2.0","id":5,"method":"nope"}`, "rejected", mcp.UnknownMethod, ""},
		{callBody(6, "create_ticket", map[string]any{"title": secretTitle}, rawMeta("user-a", "log-rid-1")), "created", "", ""},
		{callBody(7, "create_ticket", map[string]any{"title": secretTitle}, with(rawMeta("user-a", "log-rid-1"), "_aiv_nonce", wrongNonce)), "unauthorized", "", ""},
		{callBody(8, "create_ticket", map[string]any{"title": secretTitle}, with(rawMeta("user-a", "log-rid-1"), "request_id", 5)), "rejected", "tools/call", "invalid_params"},
		// Arguments refused before the pipeline log the refusal's code.
		{dup, "rejected", "tools/call", "invalid_arguments"},
		{long, "rejected", "tools/call", "too_large"},
	}
	for _, b := range bodies {
		before := len(strings.Split(strings.TrimSpace(r.logs.String()), "\n"))
		if r.logs.String() == "" {
			before = 0
		}
		r.postRaw(b.body)
		lines := strings.Split(strings.TrimSpace(r.logs.String()), "\n")[before:]
		if len(lines) != 1 || !strings.Contains(lines[0], `"outcome":"`+b.outcome+`"`) || !strings.Contains(lines[0], `"msg":"mcp"`) ||
			(b.method != "" && !strings.Contains(lines[0], `"method":"`+b.method+`"`)) || (b.code != "" && !strings.Contains(lines[0], `"code":"`+b.code+`"`)) {
			t.Errorf("%.60s: log %q, want one line with outcome %s and code %q", b.body, lines, b.outcome, b.code)
		}
	}
	for _, secret := range []string{validNonce(), wrongNonce, secretTitle, "user-a", "log-rid-1"} {
		if strings.Contains(r.logs.String(), secret) {
			t.Errorf("the log holds %q", secret)
		}
	}
}
