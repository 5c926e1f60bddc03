package callback_test

import (
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// debugLines returns the DEBUG lines logged so far, each without its time
// and level.
func (r *rig) debugLines() []map[string]any {
	r.t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(r.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			r.t.Fatalf("log line %q: %v", line, err)
		}
		if m["level"] == "DEBUG" {
			delete(m, "time")
			delete(m, "level")
			out = append(out, m)
		}
	}
	return out
}

// TestDebugLines: at DEBUG the handler says how long each call waited for
// its user record after the nonce's verification, and which key policy a
// create used, and the store says each failed attempt with its AWS error
// code. None of these lines carries the body, the arguments,
// externalUserId, the request id, the nonce, the hook key, a ticket id or
// a stored result.
func TestDebugLines(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy))
	proxy.Inject("TransactWriteItems", dynamotest.Fault{Error: "ThrottlingException"})
	a := r.call(create("user-a", "r-debug", signIn)) // throttled once, then created
	r.call(create("user-a", "r-debug", signIn))      // deduplicated
	r.call(create("user-d", "r-debug", signIn))      // disabled
	if kind(a) != "created" {
		t.Fatalf("first call: %s", a.raw)
	}

	policy := map[string]any{"msg": "key policy", "function": "create_ticket", "policy": "arguments"}
	user := map[string]any{"msg": "user record"}
	want := []map[string]any{
		user,
		policy,
		{"msg": "store attempt failed", "op": "TransactWriteItems", "code": "ThrottlingException", "attempt": 1.0, "retry": true},
		user,
		policy,
		user,
	}
	got := r.debugLines()
	if len(got) != len(want) {
		t.Fatalf("%d debug lines, want %d:\n%s", len(got), len(want), r.logs)
	}
	for i, g := range got {
		if _, ok := g["wait_ms"].(float64); ok && g["msg"] == "store attempt failed" {
			delete(g, "wait_ms")
		}
		if _, ok := g["waited_ms"].(float64); ok && g["msg"] == "user record" {
			delete(g, "waited_ms")
		}
		if !maps.Equal(g, want[i]) {
			t.Errorf("debug line %d = %v, want %v", i, g, want[i])
		}
	}
	raw, _ := json.Marshal(got)
	for _, s := range []string{"user-a", "user-d", "r-debug", "Cannot sign in", a.str("ticket_id"), validNonce(t), localdb.DemoHookKey} {
		if strings.Contains(string(raw), s) {
			t.Errorf("a debug line carries %q", s)
		}
	}
}
