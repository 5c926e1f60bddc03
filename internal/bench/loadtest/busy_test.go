package loadtest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/oncecall/oncecall/internal/bench/loadtest"
)

// busyServer answers busy to its first busy requests, then created.
func busyServer(t *testing.T, busy int64) (*httptest.Server, *atomic.Int64) {
	var seen atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if seen.Add(1) <= busy {
			fmt.Fprint(w, `{"status":"busy","retryable":true,"message":"Retry this same call."}`)
			return
		}
		fmt.Fprint(w, `{"status":"created","ticket_id":"t-1","deduplicated":false}`)
	}))
	t.Cleanup(srv.Close)
	return srv, &seen
}

// TestRunRetriesBusyAnswers: a busy answer is sent again, up to
// loadtest.BusyRetries times, and counted.
func TestRunRetriesBusyAnswers(t *testing.T) {
	calls := []loadtest.Call{{Op: "op", Body: []byte(`{}`)}}
	hc := loadtest.NewClient(1)
	defer hc.CloseIdleConnections()

	srv, seen := busyServer(t, 3)
	res := loadtest.Run(context.Background(), hc, srv.URL, []string{"n"}, calls, 1)
	if res[0].Outcome != "created" || res[0].Busy != 3 || seen.Load() != 4 {
		t.Fatalf("three busy answers, then created: %+v after %d requests", res[0], seen.Load())
	}
	if r := loadtest.Tally(calls, res, []loadtest.StoredTicket{{ID: "t-1", OperationKey: "k"}}); r.Busy != 3 || r.Created != 1 || r.Check() != nil {
		t.Fatalf("tally %+v: %v", r, r.Check())
	}

	srv, seen = busyServer(t, 1<<30)
	res = loadtest.Run(context.Background(), hc, srv.URL, []string{"n"}, calls, 1)
	if res[0].Outcome != "busy" || res[0].Busy != loadtest.BusyRetries || seen.Load() != loadtest.BusyRetries+1 {
		t.Fatalf("always busy: %+v after %d requests, want %d retries", res[0], seen.Load(), loadtest.BusyRetries)
	}
}
