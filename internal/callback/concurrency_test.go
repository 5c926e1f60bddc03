package callback_test

import (
	"context"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/bench/loadtest"
	"github.com/oncecall/oncecall/internal/testing/suitetest"
)

// TestMixedConcurrentRun runs the mixed plan against the handler in this
// process, so that the race detector watches the handler, its user reads
// and the store client under concurrent calls; the answers are compared
// with the store. BCrypt under the race detector is slow, so this run is
// smaller than the 1,000-call run against the server binary in
// internal/bench/loadtest.
func TestMixedConcurrentRun(t *testing.T) {
	r := newRig(t)
	const calls, ops = 400, 100
	plan, err := loadtest.Mixed(loadtest.Plan{Calls: calls, Ops: ops, Prefix: "rig", Seed: suitetest.Seed(t)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	hc := loadtest.NewClient(16)
	defer hc.CloseIdleConnections()
	results := loadtest.Run(ctx, hc, r.srv.URL+"/callback", []string{validNonce(t)}, plan, 16)
	stored, err := loadtest.StoredTickets(ctx, r.env.Client, r.env.Table, "rig")
	if err != nil {
		t.Fatal(err)
	}
	report := loadtest.Tally(plan, results, stored)
	if err := report.Check(); err != nil {
		t.Fatalf("%v\n%s", err, report)
	}
	if n := r.operations(); n != ops {
		t.Fatalf("%d operation items for %d operations", n, ops)
	}
}
