package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/mcp"
)

// TestTwoStoreRequestsPerCreate: a created call through /mcp costs the
// store two requests, the user's record and the create transaction, as
// through /callback.
func TestTwoStoreRequestsPerCreate(t *testing.T) {
	r := newRig(t, mcp.Options{})
	r.post(callBody(1, "create_ticket", signIn, rawMeta("user-a", "warm-0")))
	for door, send := range map[string]func(rid string){
		"mcp":      func(rid string) { r.post(callBody(2, "create_ticket", signIn, rawMeta("user-a", rid))) },
		"callback": func(rid string) { r.postCallback(callbackBody("user-a", rid, "create_ticket", signIn)) },
	} {
		r.env.Requests.Reset()
		send("warm-" + door)
		if ops := r.env.Requests.Operations(); r.env.Requests.Load() != 2 || ops["GetItem"] != 1 || ops["TransactWriteItems"] != 1 {
			t.Errorf("%s: a created call made %v store requests, want the user's GetItem and one TransactWriteItems", door, ops)
		}
	}
}

// createdDoors are the two doors' created calls, straight into the
// transports' shared handler stack: each call creates a new operation.
func createdDoors(r *rig) map[string]func(i int) int {
	srv := mcp.New(r.h, mcp.Options{})
	n := validNonce()
	return map[string]func(i int) int{
		"callback": func(i int) int {
			body := callbackBody("user-a", fmt.Sprintf("cb-%d", i), "create_ticket", signIn)
			return r.h.Call(context.Background(), callback.Request{Nonce: n, Body: []byte(body)}).Status
		},
		"mcp": func(i int) int {
			body := callBody(i, "create_ticket", signIn, rawMeta("user-a", fmt.Sprintf("mcp-%d", i)))
			req := httptest.NewRequest(http.MethodPost, mcp.Path, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			w := httptest.NewRecorder()
			srv.ServeHTTP(w, req)
			return w.Code
		},
	}
}

// BenchmarkCreated measures a created call through each door, same run,
// same store, at the cheapest nonce cost so that the adapter is not hidden
// behind BCrypt; it reports each door's p50 and their ratio.
func BenchmarkCreated(b *testing.B) {
	r := newRig(b, mcp.Options{})
	r.h.Logger = nil
	for _, d := range []string{"callback", "mcp"} {
		b.Run(d, func(b *testing.B) {
			call := createdDoors(r)[d]
			lat := make([]time.Duration, 0, 1024)
			i := 0
			for b.Loop() {
				start := time.Now()
				if st := call(i); st != http.StatusOK {
					b.Fatalf("status %d", st)
				}
				lat = append(lat, time.Since(start))
				i++
			}
			sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		})
	}
}
