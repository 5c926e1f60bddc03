package callback_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
)

// cost31 is a well-formed nonce of BCrypt's highest cost: verifying it would
// take the CPU for hours. It must be refused from its shape alone.
var cost31 = "$2b$31$" + strings.Repeat("A", 53)

// benchRefusal runs one refused call per iteration through the handler and
// checks afterwards that the store was never asked.
func benchRefusal(b *testing.B, nonceHeader string, status int) {
	r := newRig(b)
	r.h.Logger = nil // the log line is not what is measured
	body := []byte(create("user-a", "r-bench", signIn))
	r.env.Requests.Reset()
	b.ReportAllocs()
	for b.Loop() {
		if ans := r.h.Call(context.Background(), callback.Request{Nonce: nonceHeader, Body: body}); ans.Status != status {
			b.Fatalf("status %d, want %d: %s", ans.Status, status, ans.Body())
		}
	}
	b.StopTimer()
	if n := r.env.Requests.Load(); n != 0 {
		b.Fatalf("a refused nonce reached the store %d times", n)
	}
}

// BenchmarkCallRefusesCost31 is the whole handler path for a cost-31 nonce:
// refused from its shape, without BCrypt work and without the store.
func BenchmarkCallRefusesCost31(b *testing.B) { benchRefusal(b, cost31, http.StatusForbidden) }

// BenchmarkCallRefusesWrongKeyCost9 is the baseline: a genuine AIVAX-cost
// nonce of another key, which costs one full BCrypt verification.
func BenchmarkCallRefusesWrongKeyCost9(b *testing.B) {
	wrong, err := nonce.Generate("not-the-hook-key", 9)
	if err != nil {
		b.Fatal(err)
	}
	benchRefusal(b, wrong, http.StatusForbidden)
}

// BenchmarkHTTPRefusesCost31 adds the net/http adapter: headers, body read
// and the answer written, on an in-memory recorder.
func BenchmarkHTTPRefusesCost31(b *testing.B) {
	r := newRig(b)
	r.h.Logger = nil
	srv := httpapi.New(r.h, httpapi.Options{})
	body := create("user-a", "r-bench", signIn)
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, httpapi.CallbackPath, strings.NewReader(body))
		req.Header.Set(protocol.NonceHeader, cost31)
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != http.StatusForbidden {
			b.Fatalf("status %d", w.Code)
		}
	}
}
