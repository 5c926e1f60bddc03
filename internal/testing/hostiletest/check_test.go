package hostiletest

import (
	"strings"
	"testing"
)

// TestCheckCatchesWrongAnswers feeds Check answers that break each rule, so
// the catalogue's assertions are known to bite.
func TestCheckCatchesWrongAnswers(t *testing.T) {
	refusal := Case{Status: 200, Outcome: "rejected", Code: "invalid_arguments", Fix: "title is required"}
	created := Case{Status: 200, Outcome: "created", Deduplicated: true, Authorized: true}
	const secret = "5b0c0000-0000-4000-8000-000000000000"
	cases := []struct {
		name string
		c    Case
		raw  string
		sent string
		says string
	}{
		{"not JSON", refusal, `nope`, ``, "not JSON"},
		{"wrong status", refusal, `{"status":"created"}`, ``, "want 200"},
		{"wrong code", refusal, `{"status":"rejected","error":{"code":"other","message":"title is required"}}`, ``, `want code "invalid_arguments"`},
		{"no fix", refusal, `{"status":"rejected","error":{"code":"invalid_arguments","message":"bad"}}`, ``, "does not say"},
		{"too long", refusal, `{"status":"rejected","error":{"code":"invalid_arguments","message":"title is required` + strings.Repeat(" ", MaxAnswerBytes) + `"}}`, ``, "a refusal of"},
		{"leaked id", refusal, `{"status":"rejected","error":{"code":"invalid_arguments","message":"title is required ` + secret + `"}}`, ``, "ticket id leaked"},
		{"leaked title", refusal, `{"status":"rejected","error":{"code":"invalid_arguments","message":"title is required ` + SecretTitle + `"}}`, ``, "title leaked"},
		{"not a replay", created, `{"status":"created","ticket_id":"` + secret + `","deduplicated":false}`, ``, "want deduplicated true"},
		{"another ticket", created, `{"status":"created","ticket_id":"x","deduplicated":true}`, ``, "want the seeded"},
	}
	for _, c := range cases {
		wrong := c.c.Check(200, []byte(c.raw), []byte(c.sent), secret)
		if len(wrong) == 0 || !strings.Contains(strings.Join(wrong, "; "), c.says) {
			t.Errorf("%s: Check = %q, want it to say %q", c.name, wrong, c.says)
		}
	}
	echo := `{"status":"rejected","error":{"code":"invalid_arguments","message":"title is required ` + secret + `"}}`
	if wrong := refusal.Check(200, []byte(echo), []byte(`{"x":"`+secret+`"}`), secret); len(wrong) != 0 {
		t.Errorf("echoing what the caller sent is not a leak: %q", wrong)
	}
	ok := `{"status":"created","ticket_id":"` + secret + `","deduplicated":true}`
	if wrong := created.Check(200, []byte(ok), nil, secret); len(wrong) != 0 {
		t.Errorf("a right answer: %q", wrong)
	}
}

// TestMCPCheckCatchesWrongAnswers does the same for the MCP door's Check.
func TestMCPCheckCatchesWrongAnswers(t *testing.T) {
	rpcRefusal := MCPCase{Status: 200, RPCCode: rpcParams, Fix: "params.name"}
	denied := MCPCase{Status: 403, RPCCode: rpcUnauthorized, Code: "user_disabled", Fix: "disabled"}
	toolRefusal := MCPCase{Status: 200, Code: "missing_request_id", Fix: "is missing"}
	created := MCPCase{Status: 200, Deduplicated: true, Authorized: true}
	const secret = "5b0c0000-0000-4000-8000-000000000000"
	result := func(text, extra string) string {
		return `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + text + `"}]` + extra + `}}`
	}
	cases := []struct {
		name   string
		c      MCPCase
		status int
		raw    string
		says   string
	}{
		{"not JSON-RPC", rpcRefusal, 200, `{"status":"rejected"}`, "not JSON-RPC"},
		{"wrong status", denied, 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"disabled","data":{"code":"user_disabled"}}}`, "want 403"},
		{"wrong error code", rpcRefusal, 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"params.name"}}`, "want error -32602"},
		{"no fix", rpcRefusal, 200, `{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}}`, "does not say"},
		{"wrong data.code", denied, 403, `{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"disabled","data":{"code":"unknown_user"}}}`, `want data.code "user_disabled"`},
		{"a result for an error", rpcRefusal, 200, result("ok", ""), "want error"},
		{"not isError", toolRefusal, 200, result("missing_request_id: is missing", `,"isError":false`), "want isError"},
		{"text without the code", toolRefusal, 200, result("is missing", `,"isError":true`), "want isError"},
		{"structuredContent on an error", toolRefusal, 200, result("missing_request_id: is missing", `,"isError":true,"structuredContent":{"status":"rejected"}`), "want isError"},
		{"leaked title", toolRefusal, 200, result("missing_request_id: is missing "+SecretTitle, `,"isError":true`), "title leaked"},
		{"not a replay", created, 200, result("x", `,"structuredContent":{"status":"created","ticket_id":"`+secret+`","deduplicated":false}`), "want created with deduplicated true"},
		{"another ticket", created, 200, result("x", `,"structuredContent":{"status":"created","ticket_id":"x","deduplicated":true}`), "want the seeded"},
	}
	for _, c := range cases {
		wrong := c.c.Check(c.status, []byte(c.raw), nil, secret)
		if len(wrong) == 0 || !strings.Contains(strings.Join(wrong, "; "), c.says) {
			t.Errorf("%s: Check = %q, want it to say %q", c.name, wrong, c.says)
		}
	}
	ok := result("x", `,"isError":false,"structuredContent":{"status":"created","ticket_id":"`+secret+`","deduplicated":true}`)
	if wrong := created.Check(200, []byte(ok), nil, secret); len(wrong) != 0 {
		t.Errorf("a right answer: %q", wrong)
	}
}
