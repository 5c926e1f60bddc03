package mcp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/mcp"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
)

// unauthenticated are /mcp requests that carry no valid credential, each
// as costly as its shape allows within protocol.MaxBodyBytes.
func unauthenticated() map[string]string {
	tiny := func(n int) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"%x":{}`, i)
		}
		return b.String()
	}
	fill := func(prefix, suffix string) string {
		// As many tiny objects as the body limit holds.
		n := (protocol.MaxBodyBytes - len(prefix) - len(suffix)) / 9
		for len(prefix)+len(tiny(n))+len(suffix) > protocol.MaxBodyBytes {
			n -= 16
		}
		return prefix + tiny(n) + suffix
	}
	return map[string]string{
		"small tools/list": `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		// The probe that cost 30 ms and 22 MB: a _meta of tiny objects.
		"tools/list, _meta of tiny objects to the body limit":     fill(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{`, `}}}`),
		"tools/call, arguments of tiny objects to the body limit": fill(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","_meta":{"_aiv_nonce":"x"},"arguments":{`, `}}}`),
		// The most a body may hold and still reach the nonce's pre-check.
		"tools/call, values at the limit outside and in the arguments": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":{"title":"x","n":{` +
			tiny((mcp.MaxValues-8)/2) + `}},"_meta":{"_aiv_nonce":"x","_aiv_external_user_id":"user-a","request_id":"r-1","o":{` + tiny((mcp.MaxValues-20)/2) + `}}}}`,
	}
}

// BenchmarkUnauthenticated measures what an /mcp request without a valid
// credential costs the door and the SDK, whatever its shape, against one
// BCrypt verification at cost 9 in the same run: each shape reports its
// ratio to it (ratio-to-bcrypt9), which must stay well below 1.
func BenchmarkUnauthenticated(b *testing.B) {
	r := newRig(b, mcp.Options{})
	r.h.Logger = nil
	door := mcp.New(r.h, mcp.Options{})
	v, err := nonce.NewVerifier(0, localdb.DemoHookKey)
	if err != nil {
		b.Fatal(err)
	}
	hash, err := nonce.Generate(localdb.DemoHookKey, 9)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	const rounds = 5
	for range rounds {
		if err := v.Verify(hash); err != nil {
			b.Fatal(err)
		}
	}
	bcrypt := time.Since(start) / rounds
	for name, body := range unauthenticated() {
		if len(body) > protocol.MaxBodyBytes {
			b.Fatalf("%s: %d bytes", name, len(body))
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, mcp.Path, strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				w := httptest.NewRecorder()
				door.ServeHTTP(w, req)
				if w.Code >= 500 || strings.Contains(w.Body.String(), `"status":"created"`) || (strings.HasPrefix(name, "tools/call, values at") && !strings.Contains(w.Body.String(), "invalid_nonce")) {
					b.Fatalf("%d %.200s", w.Code, w.Body.String())
				}
			}
			b.ReportMetric(float64(b.Elapsed())/float64(b.N)/float64(bcrypt), "ratio-to-bcrypt9")
		})
	}
}
