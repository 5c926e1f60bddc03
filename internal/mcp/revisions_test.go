package mcp_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/mcp"
)

// meta2026 is params._meta of a 2026-07-28 request: its version and the
// client's capabilities and identity travel with every request.
func meta2026(version string, extra map[string]any) map[string]any {
	m := map[string]any{
		"io.modelcontextprotocol/protocolVersion":    version,
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-http", "version": "1"},
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// request is a raw JSON-RPC request.
func request(id int, method string, params map[string]any) string {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// headers2026 are the headers a 2026-07-28 client sends with a request.
func headers2026(method, name string) []string {
	h := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", method}
	if name != "" {
		h = append(h, "Mcp-Name", name)
	}
	return h
}

// TestRevision20260728 plays the 2026-07-28 revision's rules over raw
// HTTP: every result carries resultType, server/discover and tools/list
// carry the caching hints, the transport's headers must agree with the
// body, an unknown method is a 404, and a version not served is -32022
// with the versions served.
func TestRevision20260728(t *testing.T) {
	r := newRig(t, mcp.Options{})
	listBody := request(1, "tools/list", map[string]any{"_meta": meta2026("2026-07-28", nil)})
	call := func(meta map[string]any) string {
		return request(2, "tools/call", map[string]any{"name": "create_ticket", "arguments": signIn, "_meta": meta2026("2026-07-28", meta)})
	}
	for _, c := range []struct {
		name, body string
		headers    []string
		fields     []string
	}{
		{"server/discover", request(1, "server/discover", map[string]any{"_meta": meta2026("2026-07-28", nil)}), headers2026("server/discover", ""),
			[]string{`"resultType":"complete"`, `"ttlMs":600000`, `"cacheScope":"public"`, `"supportedVersions":["2026-07-28","2025-11-25","2025-06-18"]`, `"tools":{}`}},
		{"tools/list", listBody, headers2026("tools/list", ""), []string{`"resultType":"complete"`, `"ttlMs":600000`, `"cacheScope":"public"`, `"name":"create_ticket"`}},
		{"tools/call", call(rawMeta("user-a", "rev-2026")), headers2026("tools/call", "create_ticket"), []string{`"resultType":"complete"`, `"structuredContent":{"status":"created"`}},
	} {
		p := r.post(c.body, c.headers...)
		for _, f := range c.fields {
			if p.status != http.StatusOK || !strings.Contains(string(p.body.Result), f) {
				t.Errorf("%s: %d %.400s, want %s", c.name, p.status, p.raw, f)
			}
		}
	}
	for _, c := range []struct {
		name, body string
		headers    []string
		status     int
		code       int
		says       string
	}{
		{"header version contradicts _meta", listBody, []string{"MCP-Protocol-Version", "2025-11-25", "Mcp-Method", "tools/list"}, 400, -32020, "does not match"},
		{"no version header", listBody, []string{"Mcp-Method", "tools/list"}, 400, -32020, "header is required"},
		{"Mcp-Method contradicts the body", listBody, headers2026("tools/call", ""), 400, -32020, "Mcp-Method"},
		{"Mcp-Method missing", listBody, []string{"MCP-Protocol-Version", "2026-07-28"}, 400, -32020, "Mcp-Method"},
		{"Mcp-Name contradicts the body", call(rawMeta("user-a", "rev-2026-name")), headers2026("tools/call", "get_ticket"), 400, -32020, "Mcp-Name"},
		{"unknown method", request(3, "tools/delete", map[string]any{"_meta": meta2026("2026-07-28", nil)}), headers2026("tools/delete", ""), 404, -32601, "unsupported"},
		{"version not served", request(4, "tools/list", map[string]any{"_meta": meta2026("2099-01-01", nil)}),
			[]string{"MCP-Protocol-Version", "2099-01-01", "Mcp-Method", "tools/list"}, 400, -32022, "unsupported protocol version"},
	} {
		p := r.post(c.body, c.headers...)
		if p.status != c.status || p.code() != c.code || !strings.Contains(p.body.Error.Message, c.says) {
			t.Errorf("%s: %d %.300s, want %d %d %q", c.name, p.status, p.raw, c.status, c.code, c.says)
		}
		if c.code == -32022 {
			var data struct{ Supported []string }
			if err := json.Unmarshal(p.body.Error.Data, &data); err != nil || strings.Join(data.Supported, ",") != "2026-07-28,2025-11-25,2025-06-18" {
				t.Errorf("%s: data %s, want the versions served", c.name, p.body.Error.Data)
			}
		}
	}
	if n := r.tickets(); n != 1 {
		t.Errorf("%d tickets, want the one created", n)
	}
}

// TestInitializeRevisions: the initialize flow answers the version asked
// for when it is 2025-06-18 or 2025-11-25, and negotiates an older one
// (2025-03-26) up to 2025-11-25; a header naming a version not served is
// refused.
func TestInitializeRevisions(t *testing.T) {
	r := newRig(t, mcp.Options{})
	for asked, want := range map[string]string{"2025-03-26": "2025-11-25", "2025-06-18": "2025-06-18", "2025-11-25": "2025-11-25", "2024-01-01": "2025-11-25"} {
		p := r.post(request(1, "initialize", map[string]any{"protocolVersion": asked, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "raw", "version": "1"}}))
		if !strings.Contains(string(p.body.Result), `"protocolVersion":"`+want+`"`) || !strings.Contains(string(p.body.Result), `"tools":{}`) {
			t.Errorf("initialize %s: %d %s, want %s", asked, p.status, p.raw, want)
		}
	}
	for _, v := range []string{"2025-06-18", "2025-11-25"} {
		if p := r.post(request(2, "tools/list", nil), "MCP-Protocol-Version", v); p.status != http.StatusOK || !strings.Contains(string(p.body.Result), `"name":"get_ticket"`) {
			t.Errorf("tools/list at %s: %d %.200s", v, p.status, p.raw)
		}
	}
	if p := r.postRaw(request(3, "tools/list", nil), "MCP-Protocol-Version", "1999-01-01"); p.status != http.StatusBadRequest || !strings.Contains(string(p.raw), "Unsupported protocol version") {
		t.Errorf("an unsupported header: %d %s", p.status, p.raw)
	}
}

// TestBrowserSafe: a request whose Origin is not allowed, or whose body
// is not declared application/json, is refused before anything is read or
// written; an allowed origin, and no Origin at all, are served.
func TestBrowserSafe(t *testing.T) {
	r := newRig(t, mcp.Options{AllowedOrigins: []string{"https://app.example.com"}})
	create := func(rid string) string { return callBody(1, "create_ticket", signIn, rawMeta("user-a", rid)) }
	for i, c := range []struct {
		name    string
		headers []string
		status  int
	}{
		{"a page on another origin", []string{"Origin", "http://evil.example"}, http.StatusForbidden},
		{"the allowed origin's host on plain http", []string{"Origin", "http://app.example.com"}, http.StatusForbidden},
		{"the literal null origin", []string{"Origin", "null"}, http.StatusForbidden},
		{"text/plain, as a form or fetch without preflight sends", []string{"Content-Type", "text/plain"}, http.StatusUnsupportedMediaType},
		{"text/plain from another origin", []string{"Content-Type", "text/plain", "Origin", "http://evil.example"}, http.StatusForbidden},
		{"no Content-Type", []string{"Content-Type", ""}, http.StatusUnsupportedMediaType},
	} {
		if p := r.postRaw(create(fmt.Sprintf("browser-%d", i)), c.headers...); p.status != c.status {
			t.Errorf("%s: %d %s, want %d", c.name, p.status, p.raw, c.status)
		}
	}
	if n := r.tickets(); n != 0 {
		t.Fatalf("%d tickets written by refused requests", n)
	}
	for i, h := range [][]string{nil, {"Origin", "https://app.example.com"}, {"Origin", "HTTPS://APP.EXAMPLE.COM"}, {"Content-Type", "application/json; charset=utf-8"}} {
		if res := r.post(create(fmt.Sprintf("browser-ok-%d", i)), h...).tool(t); res.IsError {
			t.Errorf("%v: %+v", h, res)
		}
	}
	// None by default.
	d := newRig(t, mcp.Options{})
	if p := d.postRaw(create("browser-default"), "Origin", "https://app.example.com"); p.status != http.StatusForbidden {
		t.Errorf("no origins allowed by default: %d %s", p.status, p.raw)
	}
}

// TestUnknownMethodLogsNoText: a method MCP does not define is logged as
// UnknownMethod, whatever it says, and the line stays short.
func TestUnknownMethodLogsNoText(t *testing.T) {
	r := newRig(t, mcp.Options{})
	forged := `x","outcome":"created","op_key":"forged` + strings.Repeat("A", 10000)
	for _, headers := range [][]string{nil, headers2026("tools/delete", "")} {
		before := len(r.logs.String())
		params := map[string]any{}
		if headers != nil {
			params["_meta"] = meta2026("2026-07-28", nil)
		}
		r.postRaw(request(1, forged, params), headers...)
		line := strings.TrimSpace(r.logs.String()[before:])
		if strings.Contains(line, "forged") || strings.Contains(line, "AAAA") || len(line) > 300 ||
			!strings.Contains(line, `"method":"`+mcp.UnknownMethod+`"`) || strings.Count(line, "\n") != 0 || !strings.Contains(line, `"outcome":"rejected"`) {
			t.Errorf("headers %v: log line of %d bytes: %.400s", headers, len(line), line)
		}
	}
}
