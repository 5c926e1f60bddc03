package rt_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/rt"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/local/rtlocal"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// The end-to-end evidence against a real Request Tracker: a ticket queued
// in the store as the callback queues it, delivered by the real worker
// through the RT adapter, with a fault between oncecall and RT (the fault
// proxy in front of the real RT, or RT itself stopped and started). Every
// fault ends with exactly one RT ticket carrying the delivery's key, and
// the delivery delivered with that ticket's id: never a second ticket,
// never uncertain, since the lookup can always answer.

// e2ePolicy keeps requests short, so that a slow answer times out soon
// (yet longer than RT takes on a busy machine); the clock the worker runs
// on is the test's, and real time passes only where the proxy is waited
// for (settle).
var e2ePolicy = delivery.Policy{Timeout: 3 * time.Second, MaxAttempts: 8, MaxAge: 24 * time.Hour, BaseBackoff: time.Second, MaxBackoff: time.Minute}

// e2eRig is a worker over a fresh table, delivering to in through proxy.
type e2eRig struct {
	t     *testing.T
	in    *rtlocal.Instance
	proxy *helpdesk.Proxy
	store *dynamo.Store
	dest  *rt.Destination
	w     *delivery.Worker

	mu  sync.Mutex
	now time.Time
}

func newE2E(t *testing.T, in *rtlocal.Instance) *e2eRig {
	t.Helper()
	env := dynamotest.New(t)
	proxy, err := in.StartProxy(helpdesk.ProxyOptions{KeyOf: rtlocal.KeyOf})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	r := &e2eRig{t: t, in: in, proxy: proxy, store: dynamo.New(env.Client, env.Table), now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	if _, err := localdb.SeedDemo(context.Background(), r.store); err != nil {
		t.Fatal(err)
	}
	r.dest = newDest(t, proxy.URL, rt.Options{Token: in.Token, Queue: in.Queue, Timeout: e2ePolicy.Timeout})
	r.w = r.worker()
	return r
}

// worker is another worker on the same store and RT.
func (r *e2eRig) worker() *delivery.Worker {
	return &delivery.Worker{Store: r.store, Destination: r.dest, Policy: e2ePolicy, Now: r.clock, Rand: func(n int64) int64 { return n - 1 }}
}

func (r *e2eRig) clock() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

func (r *e2eRig) advance(d time.Duration) {
	r.mu.Lock()
	r.now = r.now.Add(d)
	r.mu.Unlock()
}

// ticket queues a ticket for RT, as the callback's transaction does.
func (r *e2eRig) ticket() (id, key string) {
	r.t.Helper()
	id = ticket.NewID()
	now := r.clock()
	op := "op-" + id
	rec := idempotency.Record{Key: op, UserID: "user-a", Tenant: "tenant-a", Function: ticket.CreateName,
		State: idempotency.Completed, Fingerprint: "fp", TicketID: id, Result: []byte(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	tk := ticket.Ticket{ID: id, Tenant: "tenant-a", UserID: "user-a", Title: "Printer on fire", Description: "It <b>burns</b>.",
		Priority: "high", CreatedAt: now, OperationKey: op, RequestID: "r-" + id}
	q := delivery.NewQueued(rt.Name, delivery.Key(op, id), now)
	if existing, taken, err := r.store.Create(context.Background(), rec, tk, &q); err != nil || taken {
		r.t.Fatalf("create: %v %v", existing, err)
	}
	return id, q.Key
}

// settle delivers ticket id with w as the stream and the sweep would,
// moving the clock to each scheduled retry (between, between is called),
// until the delivery leaves the queue. The clock jumps; what real time
// would bring meanwhile, every request the proxy forwarded finished at
// RT, the test waits for: a create a client gave up on is made before the
// lookup three request timeouts later, as on a real clock.
func (r *e2eRig) settle(w *delivery.Worker, id string, between func()) delivery.Report {
	r.t.Helper()
	for range 3 * e2ePolicy.MaxAttempts {
		rep, err := w.Handle(context.Background(), id)
		if err != nil {
			r.t.Fatalf("Handle: %v", err)
		}
		r.proxy.WaitIdle()
		switch rep.Outcome {
		case delivery.OutcomeRetried, delivery.OutcomeNotDue:
			r.advance(rep.NextAt.Sub(r.clock()) + time.Millisecond)
		case delivery.OutcomeHeld:
			r.advance(rep.HeldUntil.Sub(r.clock()) + time.Second)
		default:
			return rep
		}
		if between != nil {
			between()
		}
	}
	r.t.Fatalf("ticket %s still queued after %d attempts", id, 3*e2ePolicy.MaxAttempts)
	return delivery.Report{}
}

func (r *e2eRig) record(id string) delivery.Record {
	r.t.Helper()
	d, err := r.store.Delivery(context.Background(), id)
	if err != nil || d == nil {
		r.t.Fatalf("Delivery(%s) = %v, %v", id, d, err)
	}
	return *d
}

// e2eRow is one line of the run's table.
type e2eRow struct {
	fault                  string
	tickets                int // RT tickets carrying the key
	state                  delivery.State
	attempts               int
	creates, searches, hit int // requests through the proxy (-1 without it); faults applied
}

// TestFaultsEndToEnd delivers one ticket per fault and prints, per fault,
// the RT tickets carrying its key (always 1), the delivery's state
// (delivered; never uncertain) and its attempts.
func TestFaultsEndToEnd(t *testing.T) {
	in := sharedRT(t)
	var rows []e2eRow
	once := func(f helpdesk.Fault) func(r *e2eRig) {
		return func(r *e2eRig) {
			if err := r.proxy.Inject(f); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		name string
		// direct: the worker talks to RT itself, without the proxy.
		direct bool
		// before runs once the ticket is queued; between after each
		// attempt that scheduled another.
		before  func(r *e2eRig)
		between func(r *e2eRig)
		run     func(r *e2eRig, id string) delivery.Report
	}{
		{name: "none"},
		{name: "create's answer lost after RT made the ticket", before: once(helpdesk.Fault{Kind: helpdesk.LoseAnswer})},
		{name: "connection cut before RT read the create", before: once(helpdesk.Fault{Kind: helpdesk.ResetBefore})},
		{name: "503 before RT made anything", before: once(helpdesk.Fault{Kind: helpdesk.FailBefore, Status: 503})},
		{name: "500 after RT made the ticket", before: once(helpdesk.Fault{Kind: helpdesk.FailAfter, Status: 500})},
		{name: "slow answer past the timeout", before: once(helpdesk.Fault{Kind: helpdesk.Slow, Delay: 5 * time.Second})},
		{name: "lookup's answer lost, then 5xx, after a lost create answer", before: func(r *e2eRig) {
			for _, f := range []helpdesk.Fault{{Kind: helpdesk.LoseAnswer}, {Kind: helpdesk.LoseAnswer, Op: helpdesk.Lookup}, {Kind: helpdesk.FailBefore, Status: 502, Op: helpdesk.Lookup}} {
				once(f)(r)
			}
		}},
		{name: "429, then the answer lost", before: func(r *e2eRig) {
			once(helpdesk.Fault{Kind: helpdesk.RateLimit, RetryAfter: "2"})(r)
			once(helpdesk.Fault{Kind: helpdesk.LoseAnswer})(r)
		}},
		{name: "RT stopped (connections refused), then started", direct: true, before: func(r *e2eRig) { r.in.Stop() }, between: restartOnce()},
		{name: "RT stopped after making the ticket, started for the lookup", before: func(r *e2eRig) {
			once(helpdesk.Fault{Kind: helpdesk.LoseAnswer})(r)
		}, between: stopThenStart()},
		{name: "the same stream record twice", run: func(r *e2eRig, id string) delivery.Report {
			rep := r.settle(r.w, id, nil)
			if again, err := r.w.Handle(context.Background(), id); err != nil || again.Outcome != delivery.OutcomeSkipped {
				t.Fatalf("the record again: %+v, %v", again, err)
			}
			return rep
		}},
		{name: "two workers at once", run: func(r *e2eRig, id string) delivery.Report {
			// The first worker, holding the lease, waits at its first
			// request to RT until the second has tried: the order is the
			// test's, whatever the machine's speed.
			reached, open := make(chan struct{}), make(chan struct{})
			first := r.worker()
			first.Destination = &gated{Destination: r.dest, reached: reached, open: open}
			var firstRep delivery.Report
			var wg sync.WaitGroup
			wg.Go(func() {
				rep, err := first.Deliver(context.Background(), id)
				if err != nil {
					t.Error(err)
				}
				firstRep = rep
			})
			<-reached
			second, err := r.worker().Deliver(context.Background(), id)
			close(open)
			wg.Wait()
			if err != nil || second.Outcome != delivery.OutcomeHeld {
				t.Fatalf("the second worker, while the first holds the lease: %+v, %v; want held", second, err)
			}
			// The first delivers, or retries when RT answered past the
			// request timeout (a busy machine): either way it alone sent
			// the one create, and the delivery settles with one ticket.
			if firstRep.Outcome != delivery.OutcomeDelivered && firstRep.Outcome != delivery.OutcomeRetried {
				t.Fatalf("the first worker: %+v", firstRep)
			}
			if n := r.proxy.Counts().Creates; n != 1 {
				t.Fatalf("%d creates reached RT from two workers at once, want 1", n)
			}
			return r.settle(r.w, id, nil)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newE2E(t, in)
			if c.direct {
				r.dest = newDest(t, in.URL, rt.Options{Token: in.Token, Queue: in.Queue, Timeout: e2ePolicy.Timeout})
				r.w = r.worker()
			}
			id, key := r.ticket()
			if c.before != nil {
				c.before(r)
			}
			var rep delivery.Report
			switch {
			case c.run != nil:
				rep = c.run(r, id)
			case c.between != nil:
				rep = r.settle(r.w, id, func() { c.between(r) })
			default:
				rep = r.settle(r.w, id, nil)
			}
			d := r.record(id)
			held := byKey(t, in, key)
			n := r.proxy.Counts()
			if c.direct {
				n = helpdesk.ProxyCounts{Creates: -1, Lookups: -1, Faults: -1}
			}
			rows = append(rows, e2eRow{c.name, len(held), d.State, d.Attempts, n.Creates, n.Lookups, n.Faults})
			if len(held) != 1 {
				t.Fatalf("RT holds %d tickets carrying the key (%+v), want 1", len(held), held)
			}
			if rep.State != delivery.Delivered || d.State != delivery.Delivered || d.Receipt.ID != held[0].ID || d.Receipt.URL != r.dest.TicketURL(held[0].ID) {
				t.Fatalf("delivery %+v (report %+v); want delivered with RT ticket %s", d, rep, held[0].ID)
			}
			if h := held[0]; h.Fields[rt.TicketField] != id || h.Fields[rt.TenantField] != "tenant-a" || h.Fields[rt.UserField] != "user-a" {
				t.Fatalf("RT's ticket carries %v", h.Fields)
			}
		})
	}
	var b strings.Builder
	// tickets: RT tickets carrying the key; creates and searches: requests
	// through the proxy (a search checks each created ticket, and looks
	// up after an ambiguous create); faults: those it made misbehave.
	fmt.Fprintf(&b, "\n%-62s %7s %9s %9s %8s %7s %8s %6s\n", "fault between oncecall and RT", "tickets", "delivered", "uncertain", "attempts", "creates", "searches", "faults")
	for _, r := range rows {
		fmt.Fprintf(&b, "%-62s %7d %9d %9d %8d %7s %8s %6s\n", r.fault, r.tickets, b2i(r.state == delivery.Delivered), b2i(r.state == delivery.Uncertain), r.attempts,
			count(r.creates), count(r.searches), count(r.hit))
	}
	t.Log(b.String())
}

func count(n int) string {
	if n < 0 {
		return "-"
	}
	return fmt.Sprint(n)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// restartOnce starts RT again after the first attempt that met it stopped.
func restartOnce() func(r *e2eRig) {
	done := false
	return func(r *e2eRig) {
		if !done {
			done = true
			if err := r.in.Restart(); err != nil {
				r.t.Fatal(err)
			}
		}
	}
}

// stopThenStart stops RT after the first attempt (whose create RT made,
// its answer lost), so that the next attempt's lookup meets it stopped,
// and starts it after that one.
func stopThenStart() func(r *e2eRig) {
	step := 0
	return func(r *e2eRig) {
		step++
		switch step {
		case 1:
			r.in.Stop()
		case 2:
			if err := r.in.Restart(); err != nil {
				r.t.Fatal(err)
			}
		}
	}
}

// gated is a destination whose first request waits until open is closed,
// after closing reached: a worker using it holds its lease there.
type gated struct {
	delivery.Destination
	reached, open chan struct{}
	once          sync.Once
}

func (g *gated) wait() {
	g.once.Do(func() { close(g.reached) })
	<-g.open
}

func (g *gated) Create(ctx context.Context, key string, t ticket.Ticket) delivery.Result {
	g.wait()
	return g.Destination.Create(ctx, key, t)
}

func (g *gated) Lookup(ctx context.Context, key, externalID string) delivery.Result {
	g.wait()
	return g.Destination.Lookup(ctx, key, externalID)
}

// TestALateCreateAtRTIsCaught, against the real RT: the first create is
// held in front of RT past its client's timeout (two timeouts), so the
// lookup ResendWait later finds nothing and the worker sends again; RT
// makes that ticket, and then the held create reaches RT and makes a
// second one carrying the same key. The worker looks again after the
// request horizon, finds both, and leaves the delivery uncertain for a
// person, naming both RT tickets, never delivered with one of them.
func TestALateCreateAtRTIsCaught(t *testing.T) {
	in := sharedRT(t)
	r := newE2E(t, in)
	id, key := r.ticket()
	if err := r.proxy.Inject(helpdesk.Fault{Kind: helpdesk.Late, Delay: 2 * e2ePolicy.Timeout}); err != nil {
		t.Fatal(err)
	}
	rep, err := r.w.Handle(context.Background(), id)
	if err != nil || rep.Outcome != delivery.OutcomeRetried {
		t.Fatalf("the held create: %+v, %v; want retried", rep, err)
	}
	// Not waiting for the proxy: the held create has not reached RT when
	// the lookup runs.
	r.advance(rep.NextAt.Sub(r.clock()) + time.Millisecond)
	if rep, err = r.w.Handle(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	if n := len(byKey(t, in, key)); n != 1 {
		t.Fatalf("RT holds %d tickets after the resend (%+v), want 1: the held create arrived too soon for the case", n, rep)
	}
	r.proxy.WaitIdle() // the held create reaches RT
	held := byKey(t, in, key)
	if len(held) != 2 {
		t.Fatalf("RT holds %d tickets carrying the key once the held create arrived, want 2", len(held))
	}
	if rep.State == delivery.Queued {
		rep = r.settle(r.w, id, nil)
	}
	d := r.record(id)
	if rep.State != delivery.Uncertain || d.LastCode != "found_several" || d.Receipt.ID != "" {
		t.Fatalf("RT tickets %s and %s carry the key; the delivery is %s (code %q, RT id %q): want uncertain, found_several, none picked",
			held[0].ID, held[1].ID, rep.State, d.LastCode, d.Receipt.ID)
	}
	for _, h := range held {
		if !strings.Contains(d.Reason, h.ID) {
			t.Errorf("the reason %q does not name RT ticket %s", d.Reason, h.ID)
		}
	}
}
