package delivery

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"time"

	"github.com/oncecall/oncecall/internal/ticket"
)

// Store is what a Worker needs from storage. The dynamo package implements
// it; every method is one conditional request, so two workers, the stream
// path and the sweep, or a worker and an operator never both act on one
// delivery.
type Store interface {
	// Lease takes the delivery of ticket id for one attempt, l, when it is
	// queued, due at l.From (no next attempt time, or one not after it)
	// and held by no live lease. It returns the ticket
	// and the delivery as they were just before the lease; the store has
	// counted the attempt, set FirstSent if it was unset, and recorded the
	// lease. When the delivery cannot be leased it returns a *NotLeasableError.
	// Any other error means that this attempt holds no lease: one that
	// applied but could not be confirmed (its answer lost past the
	// store's retries, or the ticket unreadable) has been recognized or
	// given back, so that an attempt that sent nothing is never counted
	// as one that may have sent. Only when the store stays unreachable
	// even for that does the lease end at l.Until, unmarked (Sending): it
	// is then taken over as an attempt that sent nothing.
	Lease(ctx context.Context, id string, l Lease) (ticket.Ticket, Record, error)
	// Finish records r as the delivery of ticket id and releases owner's
	// lease, only while owner still holds it; otherwise ErrLeaseLost.
	Finish(ctx context.Context, id, owner string, r Record) error
	// Sending marks, while owner's lease holds the delivery of ticket id,
	// that owner's attempt is about to send a create (on), or clears a
	// mark naming owner (off: the attempt learned that its create made
	// nothing, and could not record it). Marking returns ErrLeaseLost when
	// owner no longer holds the lease. Finish clears the mark.
	Sending(ctx context.Context, id, owner string, on bool) error
	// Defer schedules the delivery of ticket id for at, while owner's lease
	// (someone else's attempt) still holds it, so that the sweep takes it
	// up if that attempt never records a result; ErrLeaseLost when owner no
	// longer holds it.
	Defer(ctx context.Context, id, owner string, at time.Time) error
	// Due returns up to limit ids of queued tickets whose next attempt is
	// due at now, from the position cursor ("" for the start of a pass);
	// next is "" after the last page of the pass. One pass reads a
	// bounded number of entries, however many are due: the rest wait for
	// the next pass.
	Due(ctx context.Context, now time.Time, cursor string, limit int) (ids []string, next string, err error)
	// Pending counts the deliveries waiting in state s (queued with a
	// retry scheduled, failed or uncertain), up to a bound of the store's.
	Pending(ctx context.Context, s State) (Count, error)
}

// Relister is a Store that may hold deliveries listed the way an earlier
// version listed them, which its Due and Pending do not see. Relist lists a
// bounded number of them anew and returns how many it moved; Sweep calls it
// before reading what is due, so that such deliveries are taken up within
// a few sweeps of an upgrade.
type Relister interface {
	Relist(ctx context.Context) (moved int, err error)
}

// Count is what Store.Pending found waiting in one state.
type Count struct {
	// N deliveries were counted. AtLeast is true when the store stopped
	// counting at its bound: there are more than N.
	N       int
	AtLeast bool
	// Earliest is, of those counted, the earliest next attempt (Queued)
	// or the earliest time one entered the state (the others); zero when
	// N is 0.
	Earliest time.Time
}

// NotLeasableError is the error Store.Lease returns when the delivery cannot be
// leased now.
type NotLeasableError struct {
	// Found is false when there is no such ticket.
	Found bool
	// Record is the delivery as the store holds it; a zero State means
	// the ticket has no delivery (no destination was configured).
	Record Record
}

func (e *NotLeasableError) Error() string {
	if !e.Found {
		return "delivery: no such ticket"
	}
	return fmt.Sprintf("delivery: not leasable (state %q)", e.Record.State)
}

// ErrLeaseLost is returned by Store.Finish and Store.Defer when the lease
// named is no longer the one holding the delivery.
var ErrLeaseLost = errors.New("delivery: lease lost")

// Observer receives the worker's measurements, for metrics.
type Observer interface {
	// Attempt is called once per attempt: its outcome (one of the
	// Outcome* names), the destination's last HTTP status (0 for none),
	// how long the attempt took, and for a delivered ticket the time from
	// the ticket's creation to its delivery. auth is true when the
	// destination refused the credentials.
	Attempt(outcome string, status int, took, latency time.Duration, auth bool)
	// Backlog is called by Sweep with what waits.
	Backlog(b Backlog)
}

// Backlog is what waits for the sweep or for a person.
type Backlog struct {
	// Queued counts queued tickets with a retry scheduled; OldestQueued is
	// how long the most overdue of them has been due (0 when none is due
	// yet): it grows when retries wait for a sweep that does not come or
	// cannot keep up.
	Queued       int
	OldestQueued time.Duration
	Uncertain    int
	Failed       int
	// AtLeast is true when a count stopped at the store's bound: the
	// counts are then lower bounds.
	AtLeast bool
}

// Outcomes of one call to Deliver, as logged and counted.
const (
	OutcomeDelivered = "delivered"
	OutcomeRetried   = "retried"
	OutcomeFailed    = "failed"
	OutcomeUncertain = "uncertain"
	// OutcomeLost: the attempt ran but its lease had been taken over (or
	// settled by an operator) before it could record what happened.
	OutcomeLost = "lost"
	// OutcomeHeld: another attempt holds a live lease.
	OutcomeHeld = "held"
	// OutcomeNotDue: a retry is scheduled for later.
	OutcomeNotDue = "not_due"
	// OutcomeSkipped: nothing to do (delivered, settled, no delivery, no
	// such ticket).
	OutcomeSkipped = "skipped"
)

// AttemptOutcomes are the outcomes Observer.Attempt receives.
var AttemptOutcomes = []string{OutcomeDelivered, OutcomeRetried, OutcomeFailed, OutcomeUncertain, OutcomeLost}

// Report says what one call to Deliver did.
type Report struct {
	Outcome string
	// State is the delivery's state afterwards, as far as this call knows.
	State   State
	Attempt int
	// Status and Code are what the destination's last answer established;
	// Auth is true when it refused the credentials (401 or 403).
	Status int
	Code   string
	Auth   bool
	// NextAt is the next attempt's time, for a retry.
	NextAt time.Time
	// HeldBy and HeldUntil name the live lease, for OutcomeHeld.
	HeldBy    string
	HeldUntil time.Time
	Receipt   Receipt
}

// Worker delivers queued tickets. Its fields are set once before use; it is
// safe for concurrent use.
type Worker struct {
	Store       Store
	Destination Destination
	Policy      Policy
	// Logger gets one line per attempt: ticket id, attempt, outcome, the
	// destination's status and cause code. Never the ticket's text, the
	// key's credentials or the destination's words. Nil logs nothing.
	Logger  *slog.Logger
	Metrics Observer
	// Voucher, when set, is asked before every create is sent whether the
	// ticket's user record still vouches for it (withhold).
	Voucher Voucher
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Rand draws the jitter of a backoff, in [0, n); nil means math/rand/v2.
	Rand func(n int64) int64
}

func (w *Worker) now() time.Time {
	if w.Now != nil {
		return w.Now()
	}
	return time.Now()
}

func (w *Worker) jitter(attempt int) time.Duration {
	if w.Rand != nil {
		return w.Policy.backoff(attempt, w.Rand)
	}
	return w.Policy.backoff(attempt, mrand.Int64N)
}

// newOwner names one attempt.
func newOwner() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Deliver makes one attempt at delivering ticket id, if the delivery can be
// leased now. The returned error is a store failure; every outcome of the
// destination is in the Report.
func (w *Worker) Deliver(ctx context.Context, id string) (Report, error) {
	rep, _, err := w.deliver(ctx, id, 0)
	return rep, err
}

// deliver is Deliver with the destination's requests bounded by budget
// (when positive) besides the lease; it also returns the delivery as the
// attempt recorded it.
func (w *Worker) deliver(ctx context.Context, id string, budget time.Duration) (Report, Record, error) {
	// The lease's time counts from before its write, on this process's
	// monotonic clock: a write the store applies only after retries (a
	// throttled table) has used up that much of the lease already, and
	// the store's Until was fixed before the first try. The write itself
	// is abandoned once no request could be sent inside the lease.
	began := time.Now()
	start := w.now()
	lease := Lease{Owner: newOwner(), From: start, Until: start.Add(w.Policy.LeaseFor())}
	end := began.Add(w.Policy.LeaseFor() - LeaseMargin)
	lctx, lcancel := context.WithDeadline(ctx, end)
	t, old, err := w.Store.Lease(lctx, id, lease)
	lcancel()
	var nl *NotLeasableError
	if errors.As(err, &nl) {
		return w.notLeased(nl, start), nl.Record, nil
	}
	if err != nil {
		return Report{}, Record{}, err
	}
	rec := takeLease(old, lease)
	// The requests must be over before the lease ends: end, a monotonic
	// instant (the Worker's clock need not be the context's), and a
	// request starts only when a whole Timeout fits before it.
	deadline := end
	if budget > 0 {
		deadline = earlierOf(deadline, began.Add(budget))
	}
	actx, cancel := context.WithDeadline(ctx, deadline)
	next, rep, made := w.attempt(actx, t, rec, end)
	cancel()
	if !next.LastSent.IsZero() {
		next.SafeAfter = laterOf(next.SafeAfter, next.LastSent.Add(w.Policy.ResendWait(w.Destination.Capabilities())))
	}
	rep.Attempt = next.Attempts
	next.LeaseOwner, next.LeaseUntil = "", time.Time{}
	if !Allowed(rec.State, next.State, ByWorker) {
		// Never recorded: the lease expires and the sweep takes it up.
		err := &TransitionError{From: rec.State, To: next.State, By: ByWorker}
		w.log(ctx, id, rep, w.now().Sub(start), err)
		return rep, next, err
	}
	err = w.Store.Finish(ctx, id, lease.Owner, next)
	took := w.now().Sub(start)
	switch {
	case errors.Is(err, ErrLeaseLost):
		rep.Outcome = OutcomeLost
	case err != nil:
		// The lease expires. The next attempt counts this one as one that
		// may have created the ticket when its mark is there: it is, unless
		// its create's answer said nothing was made, and then the mark
		// goes (Sending off; should the store refuse even that, the
		// attempt counts as maybe sent, the safe side).
		if next.Sending == lease.Owner && !made {
			err = errors.Join(err, w.Store.Sending(ctx, id, lease.Owner, false))
		}
		w.log(ctx, id, rep, took, err)
		return rep, next, err
	}
	var latency time.Duration
	if rep.Outcome == OutcomeDelivered {
		latency = next.DeliveredAt.Sub(t.CreatedAt)
	}
	if w.Metrics != nil {
		w.Metrics.Attempt(rep.Outcome, rep.Status, took, latency, rep.Auth)
	}
	w.log(ctx, id, rep, took, nil)
	return rep, next, nil
}

// Lease is one attempt's hold on a delivery: the attempt's owner, unique
// to it, and when the hold was taken and ends unless the attempt records
// its result first.
type Lease struct {
	Owner string
	From  time.Time
	Until time.Time
}

// SendingUnknown is Record.Sending where the lease replaced was taken by a
// version that wrote no mark: it counts as an attempt that may have sent.
const SendingUnknown = "?"

// takeLease is the delivery as the store holds it once Lease l succeeded
// over old: the attempt counted, the key's first use stamped, and an
// earlier attempt that died holding the lease after it was about to send
// counted as one that may have sent.
func takeLease(old Record, l Lease) Record {
	r := old
	r.Attempts++
	if r.FirstSent.IsZero() {
		r.FirstSent = l.From
	}
	if old.LeaseOwner != "" && (old.Sending == old.LeaseOwner || old.Sending == SendingUnknown) {
		// Its worker died after it was about to send: it may have sent
		// the ticket, at the latest when its lease ended. A lease that
		// ended unmarked sent nothing (a lease write that landed after
		// its attempt gave up on it, or an attempt that never got as far
		// as a create).
		r.MaybeSent = true
		if old.LeaseUntil.After(r.LastSent) {
			r.LastSent = old.LeaseUntil
		}
	}
	r.LeaseOwner, r.LeaseUntil = l.Owner, l.Until
	r.Version++
	return r
}

func (w *Worker) notLeased(nl *NotLeasableError, now time.Time) Report {
	r := nl.Record
	switch {
	case !nl.Found || r.State == "" || r.State != Queued:
		return Report{Outcome: OutcomeSkipped, State: r.State, Receipt: r.Receipt}
	case r.Leased(now):
		return Report{Outcome: OutcomeHeld, State: Queued, HeldBy: r.LeaseOwner, HeldUntil: r.LeaseUntil}
	default:
		return Report{Outcome: OutcomeNotDue, State: Queued, NextAt: r.NextAt}
	}
}

// CodeStore is the LastCode of an attempt that sent nothing because the
// store did not take its mark (Store.Sending), or its lease was lost.
const CodeStore = "store_unavailable"

// CodeLeaseShort is the LastCode of an attempt that sent nothing because
// what was left of its lease could not hold a whole request (the lease's
// write took that long).
const CodeLeaseShort = "lease_short"

// attempt runs the leased attempt: at most a lookup and a create, each
// started only while a whole Policy.Timeout fits before end, the lease's
// end less LeaseMargin on the monotonic clock.
//
// made is true when a create of this attempt may have made the ticket
// (created, ambiguous or inconsistent): false when it sent none, or its
// create's answer said that nothing was made.
func (w *Worker) attempt(ctx context.Context, t ticket.Ticket, rec Record, end time.Time) (next Record, rep Report, made bool) {
	caps := w.Destination.Capabilities()
	queued := queuedAt(&rec, t.CreatedAt)
	for range 2 {
		now := w.now()
		st, at, final, code := plan(&rec, caps, w.Policy, queued, now)
		if (st == stepLookup || st == stepSend) && time.Until(end) < w.Policy.Timeout {
			// Nothing is sent: a request begun now could outlast the
			// lease, and another attempt take over while it runs.
			return unsent(w.retry(rec, Result{Outcome: Unavailable, Code: CodeLeaseShort}, queued, false))
		}
		switch st {
		case stepStop:
			return unsent(w.end(rec, final, Result{Code: code}, now))
		case stepWait:
			return unsent(w.schedule(rec, at, Result{Code: code}))
		case stepLookup:
			res := w.call(ctx, func(ctx context.Context) Result { return w.Destination.Lookup(ctx, rec.KeyFor(caps), t.ID) })
			switch res.Outcome {
			case Found:
				return unsent(w.delivered(rec, res, w.now()))
			case Inconsistent:
				return unsent(w.end(rec, Uncertain, res, w.now()))
			case Absent:
				// Past the settle delay, a miss is an answer: no earlier
				// request created it.
				rec.MaybeSent = false
				rec.LastCode, rec.LastStatus = "absent", res.Status
				continue
			default:
				return unsent(w.retry(rec, res, queued, true))
			}
		case stepSend:
			// Only a create is withheld from a user who lost access: a
			// lookup reads what an earlier create did, and is recorded.
			if next, rep, done := w.withhold(ctx, t, rec); done {
				return next, rep, false
			}
			// The mark first: should this attempt die from here on, the
			// next one counts it as one that may have sent, and only then.
			if err := w.Store.Sending(ctx, t.ID, rec.LeaseOwner, true); err != nil {
				// Nothing is sent; a lease lost meanwhile is what Finish
				// reports.
				return unsent(w.retry(rec, Result{Outcome: Unavailable, Code: CodeStore}, queued, false))
			}
			rec.Sending = rec.LeaseOwner
			if time.Until(end) < w.Policy.Timeout {
				return unsent(w.retry(rec, Result{Outcome: Unavailable, Code: CodeLeaseShort}, queued, false))
			}
			res := w.call(ctx, func(ctx context.Context) Result { return w.Destination.Create(ctx, rec.KeyFor(caps), t) })
			next, rep := w.afterSend(rec, res, queued)
			return next, rep, res.Outcome == Created || res.Outcome == Ambiguous || res.Outcome == Inconsistent
		}
	}
	// Unreachable: a confirmed absence clears MaybeSent, after which plan
	// only sends or stops.
	return unsent(w.end(rec, Uncertain, Result{Code: "internal"}, w.now()))
}

// unsent is an attempt's result where no create of it made anything.
func unsent(r Record, rep Report) (Record, Report, bool) { return r, rep, false }

// queuedAt is when the age budget (Policy.MaxAge) of the leased delivery r
// of a ticket created at created starts: when it was queued, which is the
// ticket's creation or, after an operator settled it "not created", that
// decision (Since of a queued delivery). Without it, a ticket an operator
// queues again a day after its creation would fail at once, unattempted.
func queuedAt(r *Record, created time.Time) time.Time {
	if r.State == Queued && r.Since.After(created) {
		return r.Since
	}
	return created
}

// call runs one request to the destination within Policy.Timeout.
func (w *Worker) call(ctx context.Context, f func(context.Context) Result) Result {
	rctx, cancel := context.WithTimeout(ctx, w.Policy.Timeout)
	defer cancel()
	return f(rctx)
}

// CodeConfirming is the LastCode of a create that made the ticket after a
// lookup found none, while the earlier request the lookup could not see
// may still arrive: the delivery is looked up again, never sent, once
// RequestHorizon has passed.
const CodeConfirming = "confirming"

// CodeRefused is the LastCode of a refusal that came after a request that
// may have created the ticket: only a lookup can tell which one counts.
const CodeRefused = "refused"

func (w *Worker) afterSend(rec Record, res Result, queued time.Time) (Record, Report) {
	now := w.now()
	caps := w.Destination.Capabilities()
	switch res.Outcome {
	case Created:
		if caps.Lookup && !rec.MaybeSent && !rec.LastSent.IsZero() {
			// It followed a lookup that found nothing after a request
			// that may have created the ticket: that request may still
			// reach the destination and make a second one. The key is
			// looked up again once it no longer can (RequestHorizon),
			// and a second ticket then ends the delivery uncertain.
			rec.MaybeSent, rec.LastSent = true, now
			res.Code = CodeConfirming
			return w.schedule(rec, laterOf(now.Add(caps.horizon()), w.Policy.lookupAt(&rec, caps)), res)
		}
		return w.delivered(rec, res, now)
	case Inconsistent:
		// The create made a ticket the destination does not show as
		// this one's alone: a person decides which is it.
		rec.MaybeSent, rec.LastSent = true, now
		return w.end(rec, Uncertain, res, now)
	case Refused:
		if !rec.MaybeSent {
			return w.end(rec, Failed, res, now)
		}
		// An earlier request may have made the ticket; this refusal does
		// not say it did not.
		if caps.Lookup {
			res.Code = CodeRefused
			return w.schedule(rec, laterOf(now, w.Policy.lookupAt(&rec, caps)), res)
		}
		return w.end(rec, Uncertain, res, now)
	case Ambiguous:
		rec.MaybeSent = true
		rec.LastSent = now
		// The request may still be running at the destination: the same
		// key goes again only ResendTimeouts timeouts later.
		next := now.Add(max(w.jitter(rec.Attempts), res.RetryAfter, ResendTimeouts*w.Policy.Timeout))
		switch {
		case w.more(rec, next, queued) && insideWindow(&rec, caps, w.Policy, next):
			return w.schedule(rec, next, res)
		case caps.Lookup && rec.Attempts <= w.Policy.MaxAttempts:
			return w.schedule(rec, laterOf(next, w.Policy.lookupAt(&rec, caps)), res)
		default:
			return w.end(rec, Uncertain, res, now)
		}
	default: // Unavailable, or an adapter's zero Result
		return w.retry(rec, res, queued, false)
	}
}

// more reports whether another attempt is allowed at next, for a delivery
// queued at queued.
func (w *Worker) more(rec Record, next, queued time.Time) bool {
	return rec.Attempts < w.Policy.MaxAttempts && next.Sub(queued) <= w.Policy.MaxAge
}

// retry schedules another attempt after a request that changed nothing,
// or ends the delivery when none is allowed: failed when no request may
// have created the ticket, uncertain when one may have and it cannot be
// looked up once more.
func (w *Worker) retry(rec Record, res Result, queued time.Time, wasLookup bool) (Record, Report) {
	now := w.now()
	next := now.Add(max(w.jitter(rec.Attempts), res.RetryAfter))
	caps := w.Destination.Capabilities()
	switch {
	case w.more(rec, next, queued):
		return w.schedule(rec, next, res)
	case !rec.MaybeSent:
		return w.end(rec, Failed, res, now)
	case caps.Lookup && !wasLookup && rec.Attempts <= w.Policy.MaxAttempts:
		// One lookup past the budget settles a ticket that may exist.
		return w.schedule(rec, laterOf(next, w.Policy.lookupAt(&rec, caps)), res)
	default:
		return w.end(rec, Uncertain, res, now)
	}
}

func (w *Worker) schedule(rec Record, at time.Time, res Result) (Record, Report) {
	rec.State = Queued
	rec.NextAt = at
	if rec.Since.IsZero() {
		rec.Since = at
	}
	rec.LastCode, rec.LastStatus = res.Code, res.Status
	return rec, Report{Outcome: OutcomeRetried, State: Queued, Status: res.Status, Code: res.Code, Auth: res.Auth, NextAt: at}
}

func (w *Worker) end(rec Record, s State, res Result, now time.Time) (Record, Report) {
	rec.State = s
	rec.NextAt = time.Time{}
	rec.Since = now
	rec.LastCode, rec.LastStatus = res.Code, res.Status
	if res.Reason != "" {
		rec.Reason = res.Reason
	}
	outcome := OutcomeFailed
	if s == Uncertain {
		outcome = OutcomeUncertain
	}
	return rec, Report{Outcome: outcome, State: s, Status: res.Status, Code: res.Code, Auth: res.Auth}
}

func (w *Worker) delivered(rec Record, res Result, now time.Time) (Record, Report) {
	rec.State = Delivered
	rec.NextAt = time.Time{}
	rec.Since, rec.DeliveredAt = now, now
	rec.Receipt = res.Receipt
	rec.LastCode, rec.LastStatus = "", res.Status
	rec.Reason = ""
	return rec, Report{Outcome: OutcomeDelivered, State: Delivered, Status: res.Status, Receipt: res.Receipt}
}

func earlierOf(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func laterOf(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (w *Worker) log(ctx context.Context, id string, rep Report, took time.Duration, err error) {
	if w.Logger == nil {
		return
	}
	level := slog.LevelInfo
	attrs := []slog.Attr{
		slog.String("ticket_id", id),
		slog.Int("attempt", rep.Attempt),
		slog.String("outcome", rep.Outcome),
		slog.String("state", string(rep.State)),
		slog.String("destination", w.Destination.Name()),
		slog.Int("status", rep.Status),
		slog.Float64("duration_ms", float64(took.Microseconds())/1000),
	}
	if rep.Code != "" {
		attrs = append(attrs, slog.String("code", rep.Code))
	}
	if !rep.NextAt.IsZero() {
		attrs = append(attrs, slog.String("next_at", rep.NextAt.UTC().Format(time.RFC3339)))
	}
	if err != nil {
		level = slog.LevelError
		attrs = append(attrs, slog.String("cause", err.Error()))
	}
	if rep.Outcome == OutcomeUncertain || rep.Outcome == OutcomeFailed || rep.Outcome == OutcomeLost {
		level = max(level, slog.LevelWarn)
	}
	w.Logger.LogAttrs(ctx, level, "delivery", attrs...)
}
