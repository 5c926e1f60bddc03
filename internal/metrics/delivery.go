package metrics

import (
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
)

// Metric names of the delivery worker, besides the attempt outcomes
// (delivery.AttemptOutcomes), which are on every attempt's line like a
// call's outcomes.
const (
	// Attempts is 1 on every attempt's line; Latency is its duration.
	Attempts = "attempts"
	// DeliveryLatency is, on a delivered ticket's line, the milliseconds
	// from the ticket's creation to the helpdesk's answer.
	DeliveryLatency = "delivery_latency"
	// AuthFailed is 1 when the destination refused the credentials.
	AuthFailed = "auth_failed"
	// The sweep's backlog: queued tickets with a retry scheduled, the
	// seconds the oldest has waited, and the deliveries waiting for a
	// person.
	QueuedBacklog    = "queued_backlog"
	OldestQueuedAge  = "oldest_queued_age"
	UncertainBacklog = "uncertain_backlog"
	FailedBacklog    = "failed_backlog"
)

var _ delivery.Observer = (*EMF)(nil)

// Attempt writes the line of one delivery attempt. It implements
// delivery.Observer; the recorder's outcomes should be
// delivery.AttemptOutcomes.
func (e *EMF) Attempt(outcome string, status int, took, latency time.Duration, auth bool) {
	defs := make([]metricDef, 0, len(e.outcomes)+4)
	line := make(map[string]any, len(e.outcomes)+8)
	for _, o := range e.outcomes {
		defs = append(defs, metricDef{Name: o, Unit: "Count"})
		line[o] = b2i(o == outcome)
	}
	defs = append(defs, metricDef{Name: Attempts, Unit: "Count"}, metricDef{Name: Latency, Unit: "Milliseconds"},
		metricDef{Name: AuthFailed, Unit: "Count"})
	line[Attempts] = 1
	line[Latency] = ms(took)
	line[AuthFailed] = b2i(auth)
	if outcome == delivery.OutcomeDelivered {
		defs = append(defs, metricDef{Name: DeliveryLatency, Unit: "Milliseconds"})
		line[DeliveryLatency] = ms(latency)
	}
	line["outcome"] = outcome
	line["status"] = status
	e.emit(line, defs)
}

// Backlog writes the line of one sweep's backlog. It implements
// delivery.Observer.
func (e *EMF) Backlog(b delivery.Backlog) {
	e.emit(map[string]any{
		QueuedBacklog:    b.Queued,
		OldestQueuedAge:  b.OldestQueued.Seconds(),
		UncertainBacklog: b.Uncertain,
		FailedBacklog:    b.Failed,
	}, []metricDef{
		{Name: QueuedBacklog, Unit: "Count"}, {Name: OldestQueuedAge, Unit: "Seconds"},
		{Name: UncertainBacklog, Unit: "Count"}, {Name: FailedBacklog, Unit: "Count"},
	})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
