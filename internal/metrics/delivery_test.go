package metrics_test

import (
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/metrics"
)

func TestAttemptLines(t *testing.T) {
	w := &writes{}
	e := metrics.New(w, "oncecall", "oncecall-DeliverFunction-abc", delivery.AttemptOutcomes)
	e.Attempt(delivery.OutcomeDelivered, 201, 40*time.Millisecond, 1500*time.Millisecond, false)
	e.Attempt(delivery.OutcomeRetried, 401, 30*time.Millisecond, 0, true)
	if len(w.lines) != 2 {
		t.Fatalf("%d lines", len(w.lines))
	}
	l, m := check(t, w.lines[0])
	names := map[string]bool{}
	for _, d := range l.AWS.CloudWatchMetrics[0].Metrics {
		names[d.Name] = true
	}
	for _, n := range append([]string{metrics.Attempts, metrics.Latency, metrics.AuthFailed, metrics.DeliveryLatency}, delivery.AttemptOutcomes...) {
		if !names[n] {
			t.Errorf("metric %s not declared", n)
		}
	}
	if num(t, m, delivery.OutcomeDelivered) != 1 || num(t, m, delivery.OutcomeRetried) != 0 || num(t, m, metrics.DeliveryLatency) != 1500 || num(t, m, metrics.AuthFailed) != 0 {
		t.Errorf("delivered line %v", m)
	}
	_, m = check(t, w.lines[1])
	if num(t, m, delivery.OutcomeRetried) != 1 || num(t, m, metrics.AuthFailed) != 1 {
		t.Errorf("retried line %v", m)
	}
	if _, ok := m[metrics.DeliveryLatency]; ok {
		t.Error("a delivery latency on an attempt that delivered nothing")
	}
}

func TestBacklogLine(t *testing.T) {
	w := &writes{}
	metrics.New(w, "oncecall", "svc", delivery.AttemptOutcomes).Backlog(delivery.Backlog{Queued: 3, OldestQueued: 90 * time.Second, Uncertain: 1, Failed: 2})
	_, m := check(t, w.lines[0])
	if num(t, m, metrics.QueuedBacklog) != 3 || num(t, m, metrics.OldestQueuedAge) != 90 || num(t, m, metrics.UncertainBacklog) != 1 || num(t, m, metrics.FailedBacklog) != 2 {
		t.Errorf("backlog line %v", m)
	}
}
