package callback

import (
	"context"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
)

// Outbox hands the tickets the Handler creates on to a destination.
// *delivery.Outbox implements it. A Handler without one keeps tickets in
// oncecall's table only, as before destinations existed.
type Outbox interface {
	// Destination names the destination a new ticket is queued for.
	Destination() string
	// Committed is told of ticket id once its transaction has committed.
	// It may make the first delivery attempt itself, within ctx, and
	// returns the delivery as it stands afterwards; nil when it left the
	// ticket to the worker (still queued).
	Committed(ctx context.Context, id string) *delivery.Record
	// Keep is how long the operation of a queued ticket is kept at least,
	// whatever the retention: as long as its delivery may take.
	Keep() time.Duration
}

// queued is the delivery a new ticket is written with: its key derived
// from the operation and the ticket, nothing attempted yet.
func (h *Handler) queued(opKey, ticketID string, now time.Time) *delivery.Record {
	if h.Outbox == nil {
		return nil
	}
	r := delivery.NewQueued(h.Outbox.Destination(), delivery.Key(opKey, ticketID), now)
	return &r
}
