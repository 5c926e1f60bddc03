package delivery

import "time"

// Policy bounds the delivery of one ticket.
type Policy struct {
	// Timeout bounds one request to the destination.
	Timeout time.Duration
	// MaxAttempts bounds the attempts (leases taken); MaxAge bounds the
	// time since the ticket was queued: created, or queued again by an
	// operator (who also resets the attempts). Past either, a delivery
	// ends failed (certainly not created) or uncertain (maybe created).
	MaxAttempts int
	MaxAge      time.Duration
	// BaseBackoff is the upper bound of the first randomized wait between
	// attempts; each later wait doubles it, up to MaxBackoff. A
	// Retry-After from the destination is always waited out.
	BaseBackoff time.Duration
	MaxBackoff  time.Duration
}

// Defaults of a Policy, each a named constant documented in docs/configuration.md.
const (
	DefaultTimeout     = 10 * time.Second
	DefaultMaxAttempts = 8
	DefaultMaxAge      = 24 * time.Hour
	DefaultBaseBackoff = 2 * time.Second
	DefaultMaxBackoff  = 5 * time.Minute
	// LeaseMargin is added to an attempt's requests to record its result
	// before the lease ends.
	LeaseMargin = 10 * time.Second
	// SettleHorizon is how long a person has, after a delivery's last
	// possible attempt, to settle it (uncertain or failed) while its
	// operation still deduplicates: a call repeated meanwhile is answered
	// with the same ticket, never a second one.
	SettleHorizon = 7 * 24 * time.Hour
	// StreamGrace is how long after its creation a ticket's first attempt
	// is left to the table's stream before the sweep makes it: a stream
	// record that exhausted its retries, a function that could not start,
	// or a mapping re-created after the stream's 24 hours never strands a
	// ticket. (A lease keeps the two from attempting at once.)
	StreamGrace = 2 * time.Minute
	// ResendTimeouts is how many request timeouts pass, after a request
	// whose answer never came, before the same key is sent again or a
	// person may settle the ticket as not created: the first request may
	// still be running at the destination.
	ResendTimeouts = 3
)

// ResendWait is how long after a request that may have created the ticket
// the same key is not sent again by a person's decision: ResendTimeouts
// request timeouts, or the destination's settle delay when longer.
func (p Policy) ResendWait(caps Capabilities) time.Duration {
	return max(ResendTimeouts*p.Timeout, caps.SettleDelay)
}

// lookupAt is when a lookup may settle r: ResendWait after the last
// request that may have created the ticket, whichever path found it may
// have (an ambiguous answer, or a lease taken over from an attempt that
// was about to send). A lookup earlier than that could miss a request
// still running at the destination, and the resend that follows it would
// make a second ticket.
func (p Policy) lookupAt(r *Record, caps Capabilities) time.Time {
	return r.LastSent.Add(p.ResendWait(caps))
}

// DefaultPolicy is the Policy used when nothing is configured.
var DefaultPolicy = Policy{
	Timeout: DefaultTimeout, MaxAttempts: DefaultMaxAttempts, MaxAge: DefaultMaxAge,
	BaseBackoff: DefaultBaseBackoff, MaxBackoff: DefaultMaxBackoff,
}

// LeaseFor is how long an attempt holds a delivery: a lookup and a create,
// each bounded by Timeout, and LeaseMargin to record what happened.
func (p Policy) LeaseFor() time.Duration { return 2*p.Timeout + LeaseMargin }

// NewQueued is the delivery a new ticket is written with at now, queued
// for destination under key, nothing attempted yet. Its first attempt is
// the stream's; NextAt, StreamGrace later, is when the sweep takes it up
// should the stream never bring it.
func NewQueued(destination, key string, now time.Time) Record {
	return Record{State: Queued, Destination: destination, Key: key, Since: now, NextAt: now.Add(StreamGrace), Version: 1}
}

// Horizon is how long the operation of a ticket queued for delivery is
// kept at least: the longest its delivery may keep trying (MaxAge since it
// was queued, and the lease of an attempt begun just before), and then
// SettleHorizon for a person to settle what the worker could not.
func (p Policy) Horizon() time.Duration { return p.MaxAge + p.LeaseFor() + SettleHorizon }

// backoff returns the randomized wait after the attempt-th attempt (1 for
// the first): full jitter under an exponentially growing cap.
func (p Policy) backoff(attempt int, int64n func(int64) int64) time.Duration {
	ceiling := p.BaseBackoff
	for i := 1; i < attempt && ceiling < p.MaxBackoff; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, p.MaxBackoff)
	if ceiling <= 0 {
		return 0
	}
	// At least a tenth of the ceiling, so a retry never comes at once.
	return ceiling/10 + time.Duration(int64n(int64(ceiling-ceiling/10)+1))
}

// step is what an attempt does next.
type step int

const (
	stepSend   step = iota // send the ticket (again) under its key
	stepLookup             // ask the destination whether it has the ticket
	stepWait               // do nothing now; try again at the given time
	stepStop               // end in a final state
)

// plan decides what a leased attempt does first, from everything the
// earlier attempts established. It is the whole of the exactly-once rule:
// a ticket that may already be at the destination is sent again only
// where the destination folds a repeat into the first (inside its
// deduplication window), is looked up where the destination can be asked,
// and otherwise is left to a person.
func plan(r *Record, caps Capabilities, p Policy, queued, now time.Time) (step, time.Time, State, string) {
	over := r.Attempts > p.MaxAttempts || now.Sub(queued) > p.MaxAge
	if !r.MaybeSent {
		if over {
			return stepStop, time.Time{}, Failed, "attempts_spent"
		}
		return stepSend, time.Time{}, "", ""
	}
	// A refusal that followed a request which may have created the ticket,
	// and a create being confirmed, are settled by a lookup, never by
	// sending again.
	if !over && r.LastCode != CodeRefused && r.LastCode != CodeConfirming && insideWindow(r, caps, p, now) {
		return stepSend, time.Time{}, "", ""
	}
	// One lookup past the budget may still settle a ticket that may exist.
	if caps.Lookup && r.Attempts <= p.MaxAttempts+1 {
		if settled := p.lookupAt(r, caps); now.Before(settled) {
			return stepWait, settled, "", "settling"
		}
		return stepLookup, time.Time{}, "", ""
	}
	return stepStop, time.Time{}, Uncertain, "maybe_sent"
}

// insideWindow reports whether a request sent at now, lasting at most
// p.Timeout, still reaches a destination that remembers the key.
func insideWindow(r *Record, caps Capabilities, p Policy, now time.Time) bool {
	if caps.DedupWindow <= 0 || r.FirstSent.IsZero() {
		return false
	}
	return now.Add(p.Timeout).Before(r.FirstSent.Add(caps.DedupWindow))
}
