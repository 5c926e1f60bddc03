package delivery

import (
	"context"
	"time"
)

// Outbox is what the callback hands each ticket it creates to: it names the
// destination new tickets are queued for, and once a ticket's transaction
// has committed it may make the first attempt itself (Inline). Otherwise
// the table's stream brings the new ticket to the worker function.
type Outbox struct {
	// Name is the destination's kind, which new tickets are queued for.
	Name string
	// Worker makes inline attempts; it may be nil when Inline is zero.
	Worker *Worker
	// Inline, when positive, bounds a first attempt made by the callback
	// itself right after the commit. Whatever it does not settle in time is
	// left to the worker.
	Inline time.Duration
	// Horizon, when longer than the callback's retention, is how long the
	// operation of a queued ticket is kept instead (Policy.Horizon): its
	// deduplication outlives its delivery.
	Horizon time.Duration
}

// Keep is Horizon: how long the operation of a queued ticket is kept at
// least.
func (o *Outbox) Keep() time.Duration { return o.Horizon }

// Destination names the destination of new tickets.
func (o *Outbox) Destination() string { return o.Name }

// Committed is told of ticket id once its transaction has committed. With
// Inline set it attempts the delivery within Inline and ctx's time and
// returns the delivery as the attempt left it; otherwise, or when the
// attempt could not start, it returns nil (the ticket stays queued).
func (o *Outbox) Committed(ctx context.Context, id string) *Record {
	var rec *Record
	if o.Inline > 0 && o.Worker != nil {
		rep, r, err := o.Worker.deliver(ctx, id, o.Inline)
		switch {
		case err != nil:
		case rep.Outcome == OutcomeDelivered, rep.Outcome == OutcomeRetried, rep.Outcome == OutcomeFailed, rep.Outcome == OutcomeUncertain:
			// What the attempt recorded is what the store now holds.
			rec = &r
		}
	}
	return rec
}
