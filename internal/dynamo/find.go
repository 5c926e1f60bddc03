package dynamo

import (
	"context"
	"strings"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/outcome"
	"github.com/oncecall/oncecall/internal/ticket"
)

// Found is one operation and its ticket, as an operator looks at them.
// Either may be missing: an operation item is deleted by TTL after its
// window while its ticket stays, and an operation that made no ticket
// (get_ticket, or a pending claim) has none.
type Found struct {
	Ticket    *ticket.Ticket
	Operation *idempotency.Record
	// Delivery is the ticket's delivery, read from the same ticket item
	// with no further request; nil when the ticket has none (created
	// without a destination) or there is no ticket.
	Delivery *delivery.Record
}

// Matches are the tickets found for one tenant and request id.
type Matches struct {
	// Found are oldest first.
	Found []Found
	// Truncated is true when more than MaxRequestMatches tickets carry the
	// request id; Found holds the oldest MaxRequestMatches.
	Truncated bool
}

// FindTicket reads ticket id and the operation that created it; nil when
// there is no such ticket.
func (a *Admin) FindTicket(ctx context.Context, id string) (*Found, error) {
	t, d, err := a.ticket(ctx, id)
	if err != nil || t == nil {
		return nil, err
	}
	f := &Found{Ticket: t, Delivery: d}
	if t.OperationKey != "" {
		if f.Operation, err = a.store.Operation(ctx, t.OperationKey); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// FindOperation reads the operation under key and its ticket; nil when
// there is no such operation (never claimed, or deleted after its window:
// FindRequest still finds its ticket).
func (a *Admin) FindOperation(ctx context.Context, key string) (*Found, error) {
	r, err := a.store.Operation(ctx, key)
	if err != nil || r == nil {
		return nil, err
	}
	f := &Found{Operation: r}
	if r.TicketID != "" {
		if f.Ticket, f.Delivery, err = a.ticket(ctx, r.TicketID); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// ticket reads ticket id and its delivery from its item, with a strongly
// consistent read; a nil ticket when there is none.
func (a *Admin) ticket(ctx context.Context, id string) (*ticket.Ticket, *delivery.Record, error) {
	item, err := a.store.get(ctx, ticketKey(id))
	if err != nil || item == nil {
		return nil, nil, err
	}
	t, err := decodeTicket(item)
	if err != nil {
		return nil, nil, err
	}
	d, err := decodeDelivery(item)
	if err != nil {
		return nil, nil, err
	}
	return &t, d, nil
}

// FindRequest finds the tickets created for requestID in tenant, oldest
// first, with their operations, by a query of LookupIndex (no scan). With
// function not empty, an operation of another function is left out. The
// index is eventually consistent: a ticket created a moment ago may not be
// listed yet.
func (a *Admin) FindRequest(ctx context.Context, tenant, requestID, function string) (Matches, error) {
	keys, more, err := a.queryKeys(ctx, requestLookup(tenant, requestID), "", MaxRequestMatches)
	if err != nil {
		return Matches{}, err
	}
	m := Matches{Truncated: more}
	for _, k := range keys {
		if !strings.HasPrefix(k, ticketPrefix) {
			continue
		}
		f, err := a.FindTicket(ctx, strings.TrimPrefix(k, ticketPrefix))
		if err != nil {
			return Matches{}, err
		}
		if f == nil || f.Ticket.Tenant != tenant || f.Ticket.RequestID != requestID {
			continue // deleted or rewritten since the index saw it
		}
		if function != "" && f.Operation != nil && f.Operation.Function != function {
			continue
		}
		m.Found = append(m.Found, *f)
	}
	return m, nil
}

// Outcome is what the application's outcome read answers for userID's
// requestID (outcome.Reader.Read, the same function).
func (a *Admin) Outcome(ctx context.Context, userID, requestID string) (outcome.View, error) {
	return outcome.Reader{Store: a.store}.Read(ctx, userID, requestID)
}
