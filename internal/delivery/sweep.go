package delivery

import (
	"context"
	"errors"
	"sync"
	"time"
)

// Sweep limits.
const (
	// SweepPage is how many due deliveries one store read returns.
	SweepPage = 50
	// SweepConcurrency bounds the deliveries a sweep runs at once.
	SweepConcurrency = 4
	// heldSlack is waited past a lease's end before trying again, so the
	// store's clock and ours need not agree to the millisecond.
	heldSlack = 250 * time.Millisecond
	// heldMaxLooks bounds the looks at a delivery whose holder keeps
	// changing.
	heldMaxLooks = 10
)

// Handle delivers ticket id if it can be attempted now, and otherwise makes
// sure it will be. A delivery held by another attempt (a stream record
// delivered twice, the stream racing the sweep) is not waited for: Handle
// schedules it in the sweep's index for when that lease ends (Defer), so
// that a worker that died holding it does not strand it, and returns at
// once, leaving the stream's shard free for the next records. When the
// holder finished or changed hands meanwhile it looks again, at most
// heldMaxLooks times. The stream path uses it for every record it gets.
func (w *Worker) Handle(ctx context.Context, id string) (Report, error) {
	for looks := 1; ; looks++ {
		rep, err := w.Deliver(ctx, id)
		if err != nil || rep.Outcome != OutcomeHeld {
			return rep, err
		}
		err = w.Store.Defer(ctx, id, rep.HeldBy, rep.HeldUntil.Add(heldSlack))
		if errors.Is(err, ErrLeaseLost) && looks < heldMaxLooks {
			continue // it finished or changed hands meanwhile: look again
		}
		return rep, err
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// SweepReport says what one sweep did.
type SweepReport struct {
	// Due is how many due deliveries were found; Outcomes counts what
	// handling them did, by outcome.
	Due      int
	Outcomes map[string]int
	Backlog  Backlog
}

// Sweep handles the deliveries whose retry is due, then measures the
// backlog. It reads one pass of Store.Due, which is bounded, and stops
// early when ctx has too little time left for another attempt: either way
// the rest waits for the next sweep. A Store that is a Relister first
// relists some deliveries an earlier version listed.
func (w *Worker) Sweep(ctx context.Context) (SweepReport, error) {
	rep := SweepReport{Outcomes: map[string]int{}}
	var mu sync.Mutex
	var errs []error
	sem := make(chan struct{}, SweepConcurrency)
	var wg sync.WaitGroup
	now := w.now()
	if rl, ok := w.Store.(Relister); ok {
		if _, err := rl.Relist(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	cursor := ""
sweep:
	for {
		ids, next, err := w.Store.Due(ctx, now, cursor, SweepPage)
		if err != nil {
			errs = append(errs, err)
			break
		}
		for _, id := range ids {
			if !w.timeFor(ctx) {
				break sweep
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				r, err := w.Handle(ctx, id)
				mu.Lock()
				defer mu.Unlock()
				rep.Due++
				if err != nil {
					errs = append(errs, err)
					return
				}
				rep.Outcomes[r.Outcome]++
			}()
		}
		if next == "" {
			break
		}
		cursor = next
	}
	wg.Wait()
	b, err := w.backlog(ctx)
	if err != nil {
		errs = append(errs, err)
	} else {
		rep.Backlog = b
		if w.Metrics != nil {
			w.Metrics.Backlog(b)
		}
	}
	return rep, errors.Join(errs...)
}

// timeFor reports whether ctx leaves time for one more attempt.
func (w *Worker) timeFor(ctx context.Context) bool {
	if ctx.Err() != nil {
		return false
	}
	dl, ok := ctx.Deadline()
	return !ok || time.Until(dl) > w.Policy.LeaseFor()
}

func (w *Worker) backlog(ctx context.Context) (Backlog, error) {
	var b Backlog
	for _, c := range []struct {
		s State
		n *int
	}{{Queued, &b.Queued}, {Uncertain, &b.Uncertain}, {Failed, &b.Failed}} {
		got, err := w.Store.Pending(ctx, c.s)
		if err != nil {
			return b, err
		}
		*c.n = got.N
		b.AtLeast = b.AtLeast || got.AtLeast
		if c.s == Queued && got.N > 0 {
			b.OldestQueued = max(0, w.now().Sub(got.Earliest))
		}
	}
	return b, nil
}
