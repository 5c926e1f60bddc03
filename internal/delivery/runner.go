package delivery

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// Runner limits.
const (
	// DefaultRunnerWorkers is how many deliveries a Runner attempts at once.
	DefaultRunnerWorkers = 4
	// DefaultSweepInterval is how often a Runner sweeps. On AWS the sweep
	// runs every minute; locally there is no stream to miss, so the sweep
	// only picks up retries and operators' requeues, and a short interval
	// keeps them prompt.
	DefaultSweepInterval = time.Second
)

// Runner runs a Worker inside the process that serves the callback, for
// local runs that have no DynamoDB stream: the callback tells it of each
// ticket it commits (Notify), as the table's stream does on AWS, and it
// sweeps every interval, as the schedule does on AWS. The Worker is the
// same code either way.
type Runner struct {
	w        *Worker
	interval time.Duration
	workers  int
	logger   *slog.Logger

	mu     sync.Mutex
	queue  []string
	signal chan struct{}
	wg     sync.WaitGroup
}

// NewRunner returns a Runner of w that sweeps every interval (0:
// DefaultSweepInterval) with workers deliveries at once (0:
// DefaultRunnerWorkers). logger receives store failures; nil drops them.
func NewRunner(w *Worker, interval time.Duration, workers int, logger *slog.Logger) *Runner {
	if interval <= 0 {
		interval = DefaultSweepInterval
	}
	if workers <= 0 {
		workers = DefaultRunnerWorkers
	}
	return &Runner{w: w, interval: interval, workers: workers, logger: logger, signal: make(chan struct{}, 1)}
}

// Start runs the Runner until ctx ends; Wait waits for it to stop.
func (r *Runner) Start(ctx context.Context) {
	for range r.workers {
		r.wg.Add(1)
		go r.work(ctx)
	}
	r.wg.Add(1)
	go r.sweep(ctx)
}

// Wait blocks until every goroutine Start began has returned.
func (r *Runner) Wait() { r.wg.Wait() }

// Notify asks for ticket id to be delivered now. It never blocks.
func (r *Runner) Notify(id string) {
	r.mu.Lock()
	r.queue = append(r.queue, id)
	r.mu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

func (r *Runner) next() (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.queue) == 0 {
		return "", false
	}
	id := r.queue[0]
	r.queue = r.queue[1:]
	if len(r.queue) > 0 {
		// Wake another worker for the rest.
		select {
		case r.signal <- struct{}{}:
		default:
		}
	}
	return id, true
}

func (r *Runner) work(ctx context.Context) {
	defer r.wg.Done()
	for {
		id, ok := r.next()
		if !ok {
			select {
			case <-ctx.Done():
				return
			case <-r.signal:
				continue
			}
		}
		if _, err := r.w.Handle(ctx, id); err != nil && ctx.Err() == nil {
			r.failed("delivery store failure; trying again when the lease ends", err)
			// The lease it may hold ends after LeaseFor; try again then.
			r.later(ctx, id, r.w.Policy.LeaseFor())
		}
	}
}

func (r *Runner) later(ctx context.Context, id string, d time.Duration) {
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if sleep(ctx, d) == nil {
			r.Notify(id)
		}
	}()
}

func (r *Runner) sweep(ctx context.Context) {
	defer r.wg.Done()
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if _, err := r.w.Sweep(ctx); err != nil && ctx.Err() == nil {
			r.failed("delivery sweep failed", err)
		}
	}
}

func (r *Runner) failed(msg string, err error) {
	if r.logger != nil {
		r.logger.Error(msg, "cause", err.Error())
	}
}
