package loadtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
)

// DeliveryReader reads a ticket's delivery. *dynamo.Store implements it.
type DeliveryReader interface {
	Delivery(ctx context.Context, ticketID string) (*delivery.Record, error)
}

// DeliveryPoll is how often WaitDelivered reads the deliveries again.
const DeliveryPoll = 250 * time.Millisecond

// WaitDelivered reads the delivery of every ticket until none is queued or
// ctx ends, and returns the last reading (a nil record: the ticket has no
// delivery).
func WaitDelivered(ctx context.Context, r DeliveryReader, tickets []StoredTicket) (map[string]*delivery.Record, error) {
	out := make(map[string]*delivery.Record, len(tickets))
	for {
		queued := 0
		for _, t := range tickets {
			if d, ok := out[t.ID]; ok && d != nil && d.State.Final() {
				continue
			}
			d, err := r.Delivery(ctx, t.ID)
			if err != nil {
				return out, err
			}
			out[t.ID] = d
			if d != nil && !d.State.Final() {
				queued++
			}
		}
		if queued == 0 {
			return out, nil
		}
		select {
		case <-ctx.Done():
			return out, nil
		case <-time.After(DeliveryPoll):
		}
	}
}

// DeliveryReport compares the deliveries of a run's tickets with what the
// helpdesk holds.
type DeliveryReport struct {
	Tickets int
	// States counts the tickets by final delivery state; "none" for a
	// ticket without a delivery.
	States map[string]int
	// Duplicated counts tickets the helpdesk holds more than once.
	Duplicated int
	// Lost counts tickets oncecall calls delivered that the helpdesk does
	// not hold under the recorded id, tickets with no delivery, and
	// tickets still queued when the run stopped waiting: everything that
	// is neither at the helpdesk nor listed for a person.
	Lost int
	// Unknown counts helpdesk tickets that name no ticket of the run.
	Unknown int
	// Faults is how many requests the helpdesk made misbehave.
	Faults int
	// Uncertain counts deliveries that ended uncertain (left to a
	// person); UncertainNeverSent those of them whose key no create
	// request ever brought to the helpdesk (CountNeverSent): an uncertain
	// delivery that was certainly never sent is a false alarm.
	Uncertain, UncertainNeverSent int
	// Examples names a few lost or duplicated tickets.
	Examples []string
}

// TallyDeliveries builds the report of a run's tickets, their deliveries
// and the helpdesk's tickets.
func TallyDeliveries(tickets []StoredTicket, records map[string]*delivery.Record, held []helpdesk.Ticket, faults int) DeliveryReport {
	rep := DeliveryReport{Tickets: len(tickets), States: map[string]int{}, Faults: faults}
	byExternal := map[string][]helpdesk.Ticket{}
	for _, h := range held {
		byExternal[h.ExternalID] = append(byExternal[h.ExternalID], h)
	}
	ours := map[string]bool{}
	for _, t := range tickets {
		ours[t.ID] = true
		at := byExternal[t.ID]
		if len(at) > 1 {
			rep.Duplicated++
			rep.example("duplicated " + t.ID)
		}
		d := records[t.ID]
		switch {
		case d == nil:
			rep.States["none"]++
			rep.Lost++
			rep.example("no delivery " + t.ID)
			continue
		case d.State == delivery.Queued:
			rep.Lost++
			rep.example(fmt.Sprintf("still queued %s (attempts %d, last %q, next %s, lease %q)", t.ID, d.Attempts, d.LastCode,
				d.NextAt.Format(time.RFC3339Nano), d.LeaseOwner))
		case d.State == delivery.Delivered && !slices.ContainsFunc(at, func(h helpdesk.Ticket) bool { return fmt.Sprint(h.ID) == d.Receipt.ID }):
			rep.Lost++
			rep.example("delivered but not at the helpdesk " + t.ID)
		}
		rep.States[string(d.State)]++
	}
	for x := range byExternal {
		if !ours[x] {
			rep.Unknown++
		}
	}
	return rep
}

// CountNeverSent counts, among the uncertain deliveries of records, those
// whose key no create request carried to the helpdesk, from the
// helpdesk's count of create requests per key (helpdesk.KeyRequests).
func (r *DeliveryReport) CountNeverSent(records map[string]*delivery.Record, keyRequests map[string]int) {
	r.Uncertain, r.UncertainNeverSent = 0, 0
	for id, d := range records {
		if d == nil || d.State != delivery.Uncertain {
			continue
		}
		r.Uncertain++
		if !slices.ContainsFunc(d.Keys(), func(k string) bool { return keyRequests[k] > 0 }) {
			r.UncertainNeverSent++
			r.example("uncertain although never sent " + id)
		}
	}
}

func (r *DeliveryReport) example(s string) {
	if len(r.Examples) < 5 {
		r.Examples = append(r.Examples, s)
	}
}

// Check returns an error unless nothing was duplicated at the destination,
// lost or unknown there, and no delivery was left uncertain that was
// never sent.
func (r DeliveryReport) Check() error {
	if r.Duplicated == 0 && r.Lost == 0 && r.Unknown == 0 && r.UncertainNeverSent == 0 {
		return nil
	}
	return fmt.Errorf("deliveries: duplicated %d, lost %d, unknown at the destination %d, uncertain although never sent %d (%s)",
		r.Duplicated, r.Lost, r.Unknown, r.UncertainNeverSent, strings.Join(r.Examples, "; "))
}

// String prints one "name: value" line per count.
func (r DeliveryReport) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "tickets: %d\n", r.Tickets)
	fmt.Fprintf(&b, "faults injected at the helpdesk: %d\n", r.Faults)
	for _, s := range append(slices.Clone(delivery.States), "none") {
		fmt.Fprintf(&b, "delivery %s: %d\n", s, r.States[string(s)])
	}
	fmt.Fprintf(&b, "uncertain deliveries: %d of %d tickets (%s)\n", r.Uncertain, r.Tickets, ratio(r.Uncertain, r.Tickets))
	fmt.Fprintf(&b, "uncertain although never sent: %d\n", r.UncertainNeverSent)
	fmt.Fprintf(&b, "duplicated at destination: %d\n", r.Duplicated)
	fmt.Fprintf(&b, "unknown at destination: %d\n", r.Unknown)
	fmt.Fprintf(&b, "lost: %d\n", r.Lost)
	return b.String()
}
