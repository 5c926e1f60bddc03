package mcp_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/oncecall/oncecall/internal/mcp"
)

var signIn = map[string]any{"title": "Cannot sign in", "priority": "high"}

// createTwice calls create_ticket twice with one request_id and checks one
// ticket exists and the second answer is the first, deduplicated.
func createTwice(t *testing.T, r *rig, cs *sdk.ClientSession, requestID string) {
	t.Helper()
	ctx := context.Background()
	before := r.tickets()
	var ids []string
	for i, dedup := range []bool{false, true} {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "create_ticket", Arguments: signIn, Meta: aivMeta("user-a", requestID)})
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		if res.IsError {
			t.Fatalf("call %d: isError %s", i, res.Content[0].(*sdk.TextContent).Text)
		}
		var sc struct {
			Status       string `json:"status"`
			TicketID     string `json:"ticket_id"`
			Deduplicated bool   `json:"deduplicated"`
		}
		raw, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(raw, &sc); err != nil || sc.Status != "created" || sc.Deduplicated != dedup {
			t.Fatalf("call %d: structuredContent %s", i, raw)
		}
		// The text block is the same object.
		if text := res.Content[0].(*sdk.TextContent).Text; text != string(raw) {
			var a, b any
			_ = json.Unmarshal([]byte(text), &a)
			_ = json.Unmarshal(raw, &b)
			if ja, _ := json.Marshal(a); string(ja) != string(raw) {
				t.Errorf("call %d: text %s, structuredContent %s", i, text, raw)
			}
		}
		ids = append(ids, sc.TicketID)
	}
	if ids[0] != ids[1] || ids[0] == "" {
		t.Errorf("ticket ids %v", ids)
	}
	if n := r.tickets(); n != before+1 {
		t.Errorf("%d new tickets, want 1", n-before)
	}
}

// TestGoSDKClient drives the server with the official Go SDK client
// through each protocol revision served: the initialize flow of 2025-06-18
// and 2025-11-25, and 2026-07-28's per-request _meta after server/discover.
func TestGoSDKClient(t *testing.T) {
	r := newRig(t, mcp.Options{})
	for _, v := range []string{"2025-06-18", "2025-11-25", ""} {
		t.Run("version "+v, func(t *testing.T) {
			cs := r.connect(v, nil)
			want := v
			if want == "" {
				want = "2026-07-28"
			}
			if got := cs.InitializeResult().ProtocolVersion; got != want {
				t.Fatalf("negotiated %s, want %s", got, want)
			}
			if cs.InitializeResult().Capabilities.Tools == nil {
				t.Fatal("no tools capability: AIVAX would list nothing")
			}
			// 2026-07-28 has no ping.
			if v != "" {
				if err := cs.Ping(context.Background(), nil); err != nil {
					t.Fatalf("ping: %v", err)
				}
			}
			list, err := cs.ListTools(context.Background(), nil)
			if err != nil || len(list.Tools) != 2 {
				t.Fatalf("tools/list: %v %v", list, err)
			}
			createTwice(t, r, cs, "sdk-"+want)
			// A refused nonce is an error the host shows its user.
			meta := aivMeta("user-a", "sdk-forged-"+want)
			meta["_aiv_nonce"] = "forged"
			_, err = cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "create_ticket", Arguments: signIn, Meta: meta})
			if err == nil || !strings.Contains(err.Error(), "invalid_nonce: ") {
				t.Errorf("a forged nonce: %v, want an error naming invalid_nonce", err)
			}
			t.Logf("Go SDK at %s: a forged nonce shown as %q", want, err)
		})
	}
}

// TestToolsList checks the list is the handler's definitions, with output
// schemas that the answers satisfy and truthful annotations.
func TestToolsList(t *testing.T) {
	for _, openWorld := range []bool{false, true} {
		r := newRig(t, mcp.Options{OpenWorld: openWorld})
		p := r.post(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		var list struct {
			Tools []struct {
				Name         string
				Description  string
				InputSchema  map[string]any
				OutputSchema map[string]any
				Annotations  map[string]bool
			}
		}
		if err := json.Unmarshal(p.body.Result, &list); err != nil || len(list.Tools) != len(r.h.Tools) {
			t.Fatalf("tools/list %s", p.raw)
		}
		for i, tl := range list.Tools {
			f := r.h.Tools[i].Function
			in, _ := json.Marshal(f.JSONSchema())
			got, _ := json.Marshal(tl.InputSchema)
			if tl.Name != f.Name || tl.Description != f.Description || string(in) != string(got) {
				t.Errorf("tool %d is not the definition %s", i, f.Name)
			}
			if tl.OutputSchema["type"] != "object" {
				t.Errorf("%s outputSchema %v", tl.Name, tl.OutputSchema)
			}
		}
		want := map[string]map[string]bool{
			"create_ticket": {"readOnlyHint": false, "destructiveHint": false, "idempotentHint": true, "openWorldHint": openWorld},
			"get_ticket":    {"readOnlyHint": true},
		}
		for _, tl := range list.Tools {
			for k, v := range want[tl.Name] {
				if got, ok := tl.Annotations[k]; !ok || got != v {
					t.Errorf("openWorld %v: %s %s = %v (present %v), want %v", openWorld, tl.Name, k, got, ok, v)
				}
			}
		}
		// Every success answer satisfies its outputSchema.
		create := r.post(callBody(2, "create_ticket", signIn, rawMeta("user-a", "schema-1"))).tool(t)
		var sc struct {
			TicketID string `json:"ticket_id"`
		}
		_ = json.Unmarshal(create.StructuredContent.(json.RawMessage), &sc)
		get := r.post(callBody(3, "get_ticket", map[string]any{"ticket_id": sc.TicketID}, rawMeta("user-a", ""))).tool(t)
		for i, res := range []sdk.CallToolResult{create, get} {
			schema := list.Tools[i].OutputSchema
			c := jsonschema.NewCompiler()
			if err := c.AddResource("out.json", schema); err != nil {
				t.Fatal(err)
			}
			s, err := c.Compile("out.json")
			if err != nil {
				t.Fatal(err)
			}
			inst, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(res.StructuredContent.(json.RawMessage))))
			if res.IsError || s.Validate(inst) != nil {
				t.Errorf("%s answer %s does not satisfy its outputSchema: %v", list.Tools[i].Name, res.StructuredContent, s.Validate(inst))
			}
		}
	}
}

// TestMixedDoors: a create through /callback and its retry through /mcp
// (and the reverse) are one operation.
func TestMixedDoors(t *testing.T) {
	r := newRig(t, mcp.Options{})
	status, first := r.postCallback(callbackBody("user-a", "mixed-1", "create_ticket", signIn))
	if status != http.StatusOK || !strings.Contains(string(first), `"deduplicated":false`) {
		t.Fatalf("callback: %d %s", status, first)
	}
	res := r.post(callBody(1, "create_ticket", signIn, rawMeta("user-a", "mixed-1"))).tool(t)
	sc := string(res.StructuredContent.(json.RawMessage))
	if res.IsError || sc != strings.Replace(string(first), `"deduplicated":false`, `"deduplicated":true`, 1) {
		t.Errorf("mcp retry %s, callback first %s", sc, first)
	}
	// The reverse: MCP first, the callback's retry.
	res = r.post(callBody(2, "create_ticket", signIn, rawMeta("user-a", "mixed-2"))).tool(t)
	status, second := r.postCallback(callbackBody("user-a", "mixed-2", "create_ticket", signIn))
	sc = string(res.StructuredContent.(json.RawMessage))
	if status != http.StatusOK || string(second) != strings.Replace(sc, `"deduplicated":false`, `"deduplicated":true`, 1) {
		t.Errorf("callback retry %d %s, mcp first %s", status, second, sc)
	}
	if n := r.tickets(); n != 2 {
		t.Errorf("%d tickets, want 2", n)
	}
}

// TestJSONRPCErrors: what this door refuses before the SDK reads the
// body gets the JSON-RPC error the spec names, and nothing is written.
func TestJSONRPCErrors(t *testing.T) {
	r := newRig(t, mcp.Options{})
	cases := []struct {
		name, body string
		status     int
		code       int
		says       string
	}{
		{"malformed JSON", `{"jsonrpc":"2.0","id":1,`, 400, -32700, "parse error"},
		{"duplicate member", `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`, 400, -32700, "parse error"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, 400, -32600, "batches"},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, 400, -32600, "id must be"},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, 400, -32600, "id must be"},
		{"arguments not an object", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":"x"}}`, 200, -32602, "params.arguments"},
	}
	for _, c := range cases {
		p := r.post(c.body)
		if p.status != c.status || p.code() != c.code || !strings.Contains(p.body.Error.Message, c.says) {
			t.Errorf("%s: %d %s, want %d %d %q", c.name, p.status, p.raw, c.status, c.code, c.says)
		}
	}
	// Notifications and responses: 202 without a body.
	for _, body := range []string{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`, `{"jsonrpc":"2.0","id":7,"result":{}}`} {
		if p := r.post(body); p.status != http.StatusAccepted || len(p.raw) != 0 {
			t.Errorf("%s: %d %q", body, p.status, p.raw)
		}
	}
	// A 2026-07-28 call needs no initialize.
	p := r.post(request(9, "tools/call", map[string]any{"name": "get_ticket", "arguments": map[string]any{"ticket_id": "not-a-ticket"},
		"_meta": meta2026("2026-07-28", map[string]any{"_aiv_nonce": validNonce(), "_aiv_external_user_id": "user-a"})}), headers2026("tools/call", "get_ticket")...)
	if res := p.tool(t); !res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "invalid_arguments") {
		t.Errorf("2026-07-28 call without initialize: %s", p.raw)
	}
	// GET and DELETE: no stream, no session.
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		req, _ := http.NewRequest(m, r.srv.URL+mcp.Path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != http.MethodPost {
			t.Errorf("%s /mcp = %d Allow %q", m, res.StatusCode, res.Header.Get("Allow"))
		}
	}
	if n, o := r.tickets(), r.operations(); n+o != 0 {
		t.Errorf("%d tickets and %d operations written", n, o)
	}
}
