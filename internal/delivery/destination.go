package delivery

import (
	"context"
	"time"

	"github.com/oncecall/oncecall/internal/ticket"
)

// Capabilities say what a destination promises about duplicates. They are
// declared in configuration and must match what the destination really
// does: the rules of this package trust them.
type Capabilities struct {
	// DedupWindow is how long the destination remembers an idempotency key:
	// a create repeated with the same key inside the window returns the
	// ticket the first one made instead of making another. Zero means the
	// destination does not deduplicate.
	DedupWindow time.Duration
	// Lookup is true when the destination can be asked for the ticket whose
	// external id is oncecall's ticket id.
	Lookup bool
	// SettleDelay is how long after a create a lookup may still miss the
	// ticket (a search index lagging behind writes). Zero means a lookup
	// sees every create at once.
	SettleDelay time.Duration
	// RequestHorizon is how long after its client gave up a create may
	// still reach the destination and make a ticket (a front or a backlog
	// holding it): no one documents a bound, so the worker looks again.
	// A create that followed a lookup's miss is looked up again this long
	// after it, and more than one ticket carrying the key then ends the
	// delivery uncertain. Zero means DefaultRequestHorizon.
	RequestHorizon time.Duration
	// ReplaysErrors is true when the destination keeps its answer per
	// idempotency key, errors included (Stripe's rule): a key whose create
	// once got a 4xx or 5xx answer gets that same answer again for as long
	// as the destination remembers the key. A resend after an operator
	// settled the delivery not created then goes under a key of its own
	// (Record.KeyFor), or it would only replay the old error.
	ReplaysErrors bool
}

// DefaultRequestHorizon is Capabilities.RequestHorizon when none is
// declared: five times the 60 seconds that the usual fronts of a helpdesk
// wait for their backend or an idle client by default (Apache httpd's
// Timeout, nginx's proxy_read_timeout and proxy_send_timeout, an AWS load
// balancer's idle timeout), after which they have given up on a request
// they still held. It is not a documented bound of any helpdesk: a create
// held longer still is not caught (docs/delivery.md).
const DefaultRequestHorizon = 5 * time.Minute

// horizon is c.RequestHorizon, or DefaultRequestHorizon when unset.
func (c Capabilities) horizon() time.Duration {
	if c.RequestHorizon > 0 {
		return c.RequestHorizon
	}
	return DefaultRequestHorizon
}

// Receipt names a ticket in the destination.
type Receipt struct {
	// ID is the destination's own ticket id.
	ID string
	// URL is where a person opens the ticket, when the destination says.
	URL string
}

// Outcome is what one request to a destination established.
type Outcome int

// Outcomes of Create and Lookup.
const (
	// Created: Create's request made the ticket, or the destination
	// recognized the idempotency key and returned the ticket an earlier
	// request made. Result.Receipt is set.
	Created Outcome = iota + 1
	// Refused: a definite refusal (400, 422 and the like). Nothing was
	// created and sending the same ticket again would be refused again.
	Refused
	// Unavailable: nothing was created (or, for Lookup, nothing was
	// learned) and trying again later is safe: 429, 401/403, a connection
	// refused before anything was sent, and any failed Lookup.
	Unavailable
	// Ambiguous: Create's request may have made the ticket: a timeout, a
	// reset or a lost answer after the request was sent, or a 5xx.
	Ambiguous
	// Found: Lookup found the ticket. Result.Receipt is set.
	Found
	// Absent: Lookup established that no ticket has the external id.
	Absent
	// Inconsistent: the destination holds tickets that contradict each
	// other or the create: more than one carries the key, or the ticket
	// a create made does not carry it. Nothing automatic may pick one; a
	// person must (the delivery ends uncertain). Result.Reason says what
	// was found, in oncecall's words (the destination's ticket ids).
	Inconsistent
)

func (o Outcome) String() string {
	switch o {
	case Created:
		return "created"
	case Refused:
		return "refused"
	case Unavailable:
		return "unavailable"
	case Ambiguous:
		return "ambiguous"
	case Found:
		return "found"
	case Absent:
		return "absent"
	case Inconsistent:
		return "inconsistent"
	}
	return "unknown"
}

// MaxReason bounds Result.Reason, in bytes.
const MaxReason = 500

// Result is what one request to a destination established.
type Result struct {
	Outcome Outcome
	// Receipt names the ticket, with Created and Found.
	Receipt Receipt
	// Status is the destination's HTTP status; 0 when there was no answer.
	Status int
	// Code is a short cause safe to log and to show an operator, such as
	// "timeout", "reset", "connection_refused", "http_429" or
	// "unauthorized". It never quotes the ticket or a credential.
	Code string
	// Reason is the destination's own explanation of a refusal, clipped to
	// MaxReason, or what an Inconsistent answer found. It may quote the
	// ticket: it is stored on the ticket for the operator and never
	// logged.
	Reason string
	// RetryAfter is the wait the destination asked for (Retry-After), zero
	// when it asked for none.
	RetryAfter time.Duration
	// Auth is true for 401 and 403: a credentials problem, retried with
	// backoff and raised as an alarm, never counted as a refusal.
	Auth bool
}

// Destination is a helpdesk that tickets are delivered to. Implementations
// are adapters (packages under internal/delivery) and must be safe for
// concurrent use. The destination's address and credentials come from
// configuration only, never from a request.
type Destination interface {
	// Name is the destination's kind, such as "webhook" or "zendesk".
	Name() string
	// Capabilities says what the destination promises about duplicates.
	Capabilities() Capabilities
	// Create sends t under idempotency key key and reports what happened.
	// Every attempt for one ticket sends the same key (Record.KeyFor:
	// after an operator's not-created decision, a key of its own where
	// the destination replays errors). It does not return
	// an error: every failure is a Result with an Outcome.
	Create(ctx context.Context, key string, t ticket.Ticket) Result
	// Lookup asks for the ticket that the create under key made, or
	// whose external id is externalID (oncecall's ticket id), whichever
	// the destination can be searched by: Found, Absent, Unavailable, or
	// Inconsistent when more than one ticket answers. key is the one the
	// attempts send (Record.KeyFor). It is only called when
	// Capabilities().Lookup is true.
	Lookup(ctx context.Context, key, externalID string) Result
}
