package canonjson

import (
	"strings"
	"testing"
)

// TestRawKeepsOneValueAsSent: the value at Limits.Raw is returned as sent,
// whatever it holds, and everything around it is still held to every
// rule: a problem inside it switches nothing off.
func TestRawKeepsOneValueAsSent(t *testing.T) {
	lim := Limits{MaxStringBytes: 16, Raw: []string{"params", "arguments"}}
	doc, err := Parse([]byte("{\"params\":{\"arguments\":{\"a\":1,\"a\":\"\xff\"},\"x\":2}}"), lim)
	if err != nil {
		t.Fatal(err)
	}
	got := doc.(map[string]any)["params"].(map[string]any)["arguments"]
	if r, ok := got.(Raw); !ok || string(r) != "{\"a\":1,\"a\":\"\xff\"}" {
		t.Errorf("arguments %#v", got)
	}
	for _, c := range []struct{ body, says string }{
		// A second arguments after a broken first one.
		{`{"params":{"arguments":{"a":1,"a":2},"arguments":{}}}`, `duplicate member name "arguments"`},
		// Duplicates, bad bytes and long strings outside it.
		{`{"params":{"arguments":{"a":1,"a":2},"_meta":{"u":1,"u":2}}}`, `duplicate member name "u" at params._meta`},
		{"{\"params\":{\"arguments\":{\"a\":1,\"a\":2},\"_meta\":{\"u\":\"\xff\"}}}", "invalid UTF-8"},
		{`{"params":{"arguments":{"a":1,"a":2}},"id":"` + strings.Repeat("i", 17) + `"}`, "string longer than 16 bytes"},
		// Not JSON at all, inside it.
		{`{"params":{"arguments":{"a":}}}`, "invalid JSON at params.arguments"},
		{`{"params":{"arguments":[}}}`, "invalid JSON at params.arguments"},
		{`{"params":{"arguments":"open}}`, "unterminated string"},
		{`{"params":{"arguments":}}`, "at params.arguments"},
	} {
		if _, err := Parse([]byte(c.body), lim); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%s: %v, want %q", c.body, err, c.says)
		}
	}
	// The value at Raw has a count of its own.
	counted := Limits{MaxValues: 8, Raw: []string{"params", "arguments"}}
	if _, err := Parse([]byte(`{"params":{"arguments":{"a":1,"b":2,"c":3}}}`), counted); err != nil {
		t.Errorf("7 tokens in the arguments: %v", err)
	}
	if _, err := Parse([]byte(`{"params":{"arguments":{"a":{},"b":{},"c":{},"d":{},"e":{}}}}`), counted); err == nil || !strings.Contains(err.Error(), "more than 8 values at params.arguments") {
		t.Errorf("11 tokens in the arguments: %v", err)
	}
	// The same names elsewhere are parsed as any value is.
	if _, err := Parse([]byte(`{"x":{"params":{"arguments":{"a":1,"a":2}}}}`), lim); err == nil {
		t.Error("a nested params.arguments was kept as sent")
	}
}

// TestMaxValues: a document of many small values is refused at the limit,
// whatever their shape, before it is parsed whole.
func TestMaxValues(t *testing.T) {
	lim := Limits{MaxValues: 10}
	if _, err := Parse([]byte(`{"a":[1,2,3],"b":{"c":null,"d":true}}`), lim); err != nil {
		t.Errorf("9 values: %v", err)
	}
	for _, body := range []string{
		`[` + strings.Repeat(`{},`, 10) + `{}]`,
		`{"a":[1,2,3,4,5,6,7,8,9,10]}`,
		`{"a":"` + strings.Repeat(`x`, 100) + `","b":[[[[[[[[[[]]]]]]]]]]}`,
	} {
		_, err := Parse([]byte(body), lim)
		if err == nil || !strings.Contains(err.Error(), "more than 10 values") {
			t.Errorf("%.40s: %v", body, err)
		}
	}
}
