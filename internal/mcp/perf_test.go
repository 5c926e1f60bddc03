package mcp_test

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/mcp"
)

// TestOneStoreRequestPerWarmCreate: once the user record is cached, a
// created call through /mcp costs the store one request, the create
// transaction, as through /callback.
func TestOneStoreRequestPerWarmCreate(t *testing.T) {
	r := newRig(t, mcp.Options{})
	r.post(callBody(1, "create_ticket", signIn, rawMeta("user-a", "warm-0")))
	for door, send := range map[string]func(rid string){
		"mcp":      func(rid string) { r.post(callBody(2, "create_ticket", signIn, rawMeta("user-a", rid))) },
		"callback": func(rid string) { r.postCallback(callbackBody("user-a", rid, "create_ticket", signIn)) },
	} {
		r.env.Requests.Reset()
		send("warm-" + door)
		if ops := r.env.Requests.Operations(); r.env.Requests.Load() != 1 || ops["TransactWriteItems"] != 1 {
			t.Errorf("%s: a warm created call made %v store requests, want one TransactWriteItems", door, ops)
		}
	}
}

// createdDoors are the two doors' created calls, straight into the
// transports' shared handler stack: each call creates a new operation.
func createdDoors(r *rig) map[string]func(i int) int {
	srv := mcp.New(r.h, mcp.Options{})
	n := validNonce()
	header := func(string) string { return "" }
	return map[string]func(i int) int{
		"callback": func(i int) int {
			body := callbackBody("user-a", fmt.Sprintf("cb-%d", i), "create_ticket", signIn)
			return r.h.Call(context.Background(), callback.Request{Nonce: n, Body: []byte(body)}).Status
		},
		"mcp": func(i int) int {
			body := callBody(i, "create_ticket", signIn, rawMeta("user-a", fmt.Sprintf("mcp-%d", i)))
			return srv.Handle(context.Background(), mcp.Request{Body: []byte(body), Header: header}).Status
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

// TestCreatedP50Ratio reports, and bounds loosely, the MCP door's p50 over
// the callback's for created calls interleaved in one run. The bound is
// loose (the machine is shared); the measured ratio is logged.
func TestCreatedP50Ratio(t *testing.T) {
	r := newRig(t, mcp.Options{})
	r.h.Logger = nil
	doors := createdDoors(r)
	const rounds = 120
	lat := map[string][]time.Duration{}
	for i := range rounds {
		for _, d := range []string{"callback", "mcp"} {
			start := time.Now()
			if st := doors[d](i); st != http.StatusOK {
				t.Fatalf("%s: status %d", d, st)
			}
			lat[d] = append(lat[d], time.Since(start))
		}
	}
	p50 := func(xs []time.Duration) time.Duration {
		sort.Slice(xs, func(i, j int) bool { return xs[i] < xs[j] })
		return xs[len(xs)/2]
	}
	cb, m := p50(lat["callback"]), p50(lat["mcp"])
	ratio := float64(m) / float64(cb)
	t.Logf("created p50: callback %v, mcp %v, ratio %.3f", cb, m, ratio)
	if ratio > 1.5 {
		t.Errorf("the MCP door's created p50 is %.2f× the callback's", ratio)
	}
}
