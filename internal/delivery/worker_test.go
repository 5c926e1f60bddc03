package delivery_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(dynamotest.Main(m)) }

// script is a destination whose answers the test lists in advance. The
// rules are checked against it request by request; the adapters' own
// classification of HTTP answers is tested against the local helpdesk.
type script struct {
	name string
	caps delivery.Capabilities

	mu      sync.Mutex
	creates []delivery.Result
	lookups []delivery.Result
	keys    []string
	looked  int
	// block, when set, is received from before a create answers.
	block chan struct{}
	// entered, when set, is sent to when a create begins (before block):
	// give it room for every create the test makes.
	entered chan struct{}
}

func (s *script) Name() string                        { return s.name }
func (s *script) Capabilities() delivery.Capabilities { return s.caps }

func (s *script) Create(ctx context.Context, key string, t ticket.Ticket) delivery.Result {
	if s.entered != nil {
		s.entered <- struct{}{}
	}
	if s.block != nil {
		select {
		case <-s.block:
		case <-ctx.Done():
			return delivery.Result{Outcome: delivery.Ambiguous, Code: "timeout"}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, key)
	if len(s.creates) == 0 {
		panic(fmt.Sprintf("unexpected create #%d of %s", len(s.keys), t.ID))
	}
	r := s.creates[0]
	s.creates = s.creates[1:]
	return r
}

func (s *script) Lookup(_ context.Context, _, id string) delivery.Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.looked++
	if len(s.lookups) == 0 {
		panic("unexpected lookup of " + id)
	}
	r := s.lookups[0]
	s.lookups = s.lookups[1:]
	return r
}

func (s *script) sent() (int, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.keys), slices.Clone(s.keys)
}

var (
	created      = delivery.Result{Outcome: delivery.Created, Status: 201, Receipt: delivery.Receipt{ID: "HD-1", URL: "https://helpdesk.test/HD-1"}}
	ambiguous    = delivery.Result{Outcome: delivery.Ambiguous, Code: "timeout"}
	serverError  = delivery.Result{Outcome: delivery.Ambiguous, Status: 503, Code: "http_503"}
	throttled    = delivery.Result{Outcome: delivery.Unavailable, Status: 429, Code: "http_429", RetryAfter: 30 * time.Second}
	refused      = delivery.Result{Outcome: delivery.Refused, Status: 422, Code: "http_422", Reason: "subject is required"}
	found        = delivery.Result{Outcome: delivery.Found, Status: 200, Receipt: delivery.Receipt{ID: "HD-1"}}
	absent       = delivery.Result{Outcome: delivery.Absent, Status: 200}
	unauthorized = delivery.Result{Outcome: delivery.Unavailable, Status: 401, Code: "unauthorized", Auth: true}
	forbidden    = delivery.Result{Outcome: delivery.Unavailable, Status: 403, Code: "forbidden", Auth: true}
	twoFound     = delivery.Result{Outcome: delivery.Inconsistent, Status: 200, Code: "found_several", Reason: "tickets HD-1 and HD-2 carry the key"}
	keyDropped   = delivery.Result{Outcome: delivery.Inconsistent, Status: 200, Code: "key_not_kept", Reason: "ticket HD-3 was created without the key"}
)

var (
	dedup    = delivery.Capabilities{DedupWindow: time.Hour}
	lookup   = delivery.Capabilities{Lookup: true, SettleDelay: 5 * time.Second}
	both     = delivery.Capabilities{DedupWindow: time.Hour, Lookup: true}
	neither  = delivery.Capabilities{}
	t0       = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	policy   = delivery.Policy{Timeout: 2 * time.Second, MaxAttempts: 4, MaxAge: 24 * time.Hour, BaseBackoff: time.Second, MaxBackoff: time.Minute}
	maxDelay = func(n int64) int64 { return n - 1 }
)

// rig is a worker over a fresh table of the embedded store.
type rig struct {
	t     *testing.T
	env   *dynamotest.Env
	store *dynamo.Store
	dest  *script
	w     *delivery.Worker

	mu  sync.Mutex
	now time.Time
}

func newRig(t *testing.T, caps delivery.Capabilities) *rig {
	t.Helper()
	env := dynamotest.New(t)
	r := &rig{t: t, env: env, store: dynamo.New(env.Client, env.Table), dest: &script{name: "script", caps: caps}, now: t0}
	seed(t, r.store)
	r.w = &delivery.Worker{Store: r.store, Destination: r.dest, Policy: policy, Now: r.clock, Rand: maxDelay}
	return r
}

// seed adds the demo users, whose records the create transaction checks.
func seed(t *testing.T, s *dynamo.Store) {
	t.Helper()
	if _, err := localdb.SeedDemo(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

func (r *rig) clock() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

func (r *rig) advance(d time.Duration) {
	r.mu.Lock()
	r.now = r.now.Add(d)
	r.mu.Unlock()
}

// ticket creates a ticket queued for delivery, as the callback does.
func (r *rig) ticket() string {
	r.t.Helper()
	id := ticket.NewID()
	now := r.clock()
	key := "op-" + id
	rec := idempotency.Record{Key: key, UserID: "user-a", Tenant: "tenant-a", Function: ticket.CreateName,
		State: idempotency.Completed, Fingerprint: "fp", TicketID: id, Result: []byte(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	tk := ticket.Ticket{ID: id, Tenant: "tenant-a", UserID: "user-a", Title: "Printer", Priority: "normal", CreatedAt: now, OperationKey: key, RequestID: "r-" + id}
	q := delivery.NewQueued("script", delivery.Key(key, id), now)
	out := &q
	if existing, taken, err := r.store.Create(context.Background(), rec, tk, out); err != nil || taken {
		r.t.Fatalf("create: %v %v", existing, err)
	}
	return id
}

func (r *rig) deliver(id string) delivery.Report {
	r.t.Helper()
	rep, err := r.w.Deliver(context.Background(), id)
	if err != nil {
		r.t.Fatalf("Deliver: %v", err)
	}
	return rep
}

func (r *rig) record(id string) delivery.Record {
	r.t.Helper()
	d, err := r.store.Delivery(context.Background(), id)
	if err != nil || d == nil {
		r.t.Fatalf("Delivery(%s) = %v, %v", id, d, err)
	}
	return *d
}

// due lists the tickets the sweep would take at now.
func (r *rig) due() []string {
	r.t.Helper()
	ids, _, err := r.store.Due(context.Background(), r.clock(), "", 100)
	if err != nil {
		r.t.Fatal(err)
	}
	return ids
}

func (r *rig) pending(s delivery.State) int {
	r.t.Helper()
	c, err := r.store.Pending(context.Background(), s)
	if err != nil {
		r.t.Fatal(err)
	}
	return c.N
}

// TestFirstAttemptDeliversInFourStoreRequests: the lease (an UpdateItem
// returning nothing, as the role's attribute condition needs), the read of
// the leased ticket, the mark that the attempt is about to send, and the
// result.
func TestFirstAttemptDeliversInFourStoreRequests(t *testing.T) {
	r := newRig(t, neither)
	r.dest.creates = []delivery.Result{created}
	id := r.ticket()
	r.env.Requests.Reset()
	rep := r.deliver(id)
	if rep.Outcome != delivery.OutcomeDelivered || rep.Receipt.ID != "HD-1" || rep.Attempt != 1 {
		t.Fatalf("report %+v", rep)
	}
	if ops := r.env.Requests.Operations(); r.env.Requests.Load() != 4 || ops["UpdateItem"] != 3 || ops["GetItem"] != 1 {
		t.Fatalf("store requests %v, want the lease, the mark and the result (3 UpdateItem) and the leased ticket's read (1 GetItem)", ops)
	}
	d := r.record(id)
	if d.State != delivery.Delivered || d.Receipt != created.Receipt || d.Attempts != 1 || d.LeaseOwner != "" || !d.DeliveredAt.Equal(t0) {
		t.Fatalf("record %+v", d)
	}
	if n, keys := r.dest.sent(); n != 1 || keys[0] != delivery.Key("op-"+id, id) {
		t.Fatalf("sent %d: %v", n, keys)
	}
	if len(r.due()) != 0 || r.pending(delivery.Queued) != 0 {
		t.Fatal("a delivered ticket is listed for the sweep")
	}
	// A second stream record, or the sweep, finds nothing to do.
	if rep := r.deliver(id); rep.Outcome != delivery.OutcomeSkipped || rep.State != delivery.Delivered {
		t.Fatalf("second delivery %+v", rep)
	}
	if n, _ := r.dest.sent(); n != 1 {
		t.Fatal("delivered twice")
	}
}

func TestThrottledIsRetriedAfterRetryAfterAndLeavesTheIndexWhenDelivered(t *testing.T) {
	r := newRig(t, neither)
	r.dest.creates = []delivery.Result{throttled, created}
	id := r.ticket()
	rep := r.deliver(id)
	if rep.Outcome != delivery.OutcomeRetried || rep.NextAt.Before(t0.Add(30*time.Second)) {
		t.Fatalf("throttled: %+v", rep)
	}
	d := r.record(id)
	if d.State != delivery.Queued || d.MaybeSent || d.LastStatus != 429 || d.LastCode != "http_429" {
		t.Fatalf("record %+v", d)
	}
	if len(r.due()) != 0 {
		t.Fatal("due before Retry-After")
	}
	if rep := r.deliver(id); rep.Outcome != delivery.OutcomeNotDue {
		t.Fatalf("attempt before Retry-After: %+v", rep)
	}
	if r.pending(delivery.Queued) != 1 {
		t.Fatal("a scheduled retry is not in the attention index")
	}
	r.advance(rep.NextAt.Sub(t0) + time.Second)
	if due := r.due(); len(due) != 1 || due[0] != id {
		t.Fatalf("due %v", due)
	}
	if rep := r.deliver(id); rep.Outcome != delivery.OutcomeDelivered || rep.Attempt != 2 {
		t.Fatalf("retry: %+v", rep)
	}
	if len(r.due()) != 0 || r.pending(delivery.Queued) != 0 {
		t.Fatal("a delivered ticket stayed in the attention index")
	}
}

func TestRefusalFailsWithTheReason(t *testing.T) {
	r := newRig(t, both)
	r.dest.creates = []delivery.Result{refused}
	id := r.ticket()
	if rep := r.deliver(id); rep.Outcome != delivery.OutcomeFailed || rep.State != delivery.Failed {
		t.Fatalf("refused: %+v", rep)
	}
	d := r.record(id)
	if d.State != delivery.Failed || d.Reason != "subject is required" || d.LastStatus != 422 {
		t.Fatalf("record %+v", d)
	}
	if r.pending(delivery.Failed) != 1 || len(r.due()) != 0 {
		t.Fatal("a failed delivery is not listed for a person, or is listed for the sweep")
	}
}

func TestAmbiguityByCapability(t *testing.T) {
	cases := []struct {
		name    string
		caps    delivery.Capabilities
		creates []delivery.Result
		lookups []delivery.Result
		// want is the state after each attempt; sends is how many creates
		// the destination saw in all.
		want  []delivery.State
		sends int
	}{
		{"dedup resends the same key", dedup, []delivery.Result{ambiguous, created}, nil,
			[]delivery.State{delivery.Queued, delivery.Delivered}, 2},
		{"dedup, 5xx then created", dedup, []delivery.Result{serverError, created}, nil,
			[]delivery.State{delivery.Queued, delivery.Delivered}, 2},
		{"lookup finds it", lookup, []delivery.Result{ambiguous}, []delivery.Result{found},
			[]delivery.State{delivery.Queued, delivery.Delivered}, 1},
		{"lookup misses, sends again, looks again", lookup, []delivery.Result{ambiguous, created}, []delivery.Result{absent, found},
			[]delivery.State{delivery.Queued, delivery.Queued, delivery.Delivered}, 2},
		{"lookup misses, sends again, the first arrives late", lookup, []delivery.Result{ambiguous, created}, []delivery.Result{absent, twoFound},
			[]delivery.State{delivery.Queued, delivery.Queued, delivery.Uncertain}, 2},
		{"neither: uncertain at once", neither, []delivery.Result{serverError}, nil,
			[]delivery.State{delivery.Uncertain}, 1},
		{"refused after an ambiguous send, lookup settles it", dedup, []delivery.Result{ambiguous, refused}, nil,
			[]delivery.State{delivery.Queued, delivery.Uncertain}, 2},
		{"both: inside the window, no lookup needed", both, []delivery.Result{ambiguous, created}, nil,
			[]delivery.State{delivery.Queued, delivery.Delivered}, 2},
		{"lookup finds two: a person picks", lookup, []delivery.Result{ambiguous}, []delivery.Result{twoFound},
			[]delivery.State{delivery.Queued, delivery.Uncertain}, 1},
		{"created without the key: a person picks", lookup, []delivery.Result{keyDropped}, nil,
			[]delivery.State{delivery.Uncertain}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.caps)
			r.dest.creates, r.dest.lookups = c.creates, c.lookups
			id := r.ticket()
			for i, want := range c.want {
				rep := r.deliver(id)
				if rep.State != want {
					t.Fatalf("attempt %d: %+v, want state %s", i+1, rep, want)
				}
				if want == delivery.Queued {
					r.advance(rep.NextAt.Sub(r.clock()) + time.Millisecond)
				}
			}
			if n, keys := r.dest.sent(); n != c.sends || (n == 2 && keys[0] != keys[1]) {
				t.Fatalf("sent %d (%v), want %d under one key", n, keys, c.sends)
			}
			if len(r.dest.lookups) != 0 {
				t.Fatalf("%d scripted lookups never made", len(r.dest.lookups))
			}
			d := r.record(id)
			if last := c.want[len(c.want)-1]; last == delivery.Uncertain && (r.pending(delivery.Uncertain) != 1 || !d.MaybeSent) {
				t.Fatalf("an uncertain delivery is not listed for a person: %+v", d)
			}
			for _, res := range append(c.creates, c.lookups...) {
				if res.Outcome == delivery.Inconsistent && (d.Reason != res.Reason || d.Receipt.ID != "") {
					t.Fatalf("what the destination holds is not kept for the person, or a ticket was picked: %+v", d)
				}
			}
		})
	}
}

func TestLookupWaitsForTheSettleDelay(t *testing.T) {
	r := newRig(t, lookup)
	r.dest.creates = []delivery.Result{ambiguous}
	r.dest.lookups = []delivery.Result{found}
	id := r.ticket()
	rep := r.deliver(id)
	if rep.State != delivery.Queued || rep.NextAt.Before(t0.Add(lookup.SettleDelay)) {
		t.Fatalf("the lookup is scheduled before the settle delay: %+v", rep)
	}
}

func TestDedupWindowElapsedBeforeTheRetry(t *testing.T) {
	for _, c := range []struct {
		caps delivery.Capabilities
		want delivery.State
	}{
		{delivery.Capabilities{DedupWindow: time.Minute}, delivery.Uncertain},
		{delivery.Capabilities{DedupWindow: time.Minute, Lookup: true}, delivery.Delivered},
	} {
		r := newRig(t, c.caps)
		r.dest.creates = []delivery.Result{ambiguous}
		r.dest.lookups = []delivery.Result{found}
		id := r.ticket()
		rep := r.deliver(id)
		if rep.State != delivery.Queued {
			t.Fatalf("%+v: first attempt %+v", c.caps, rep)
		}
		// The retry comes after the window: resending under the same key
		// could now make a second ticket.
		r.advance(2 * time.Minute)
		rep = r.deliver(id)
		if rep.State != c.want {
			t.Fatalf("%+v: after the window %+v, want %s", c.caps, rep, c.want)
		}
		if n, _ := r.dest.sent(); n != 1 {
			t.Fatalf("%+v: sent again after the window (%d sends)", c.caps, n)
		}
		if c.caps.Lookup && len(r.dest.lookups) != 0 {
			t.Fatal("no lookup before deciding")
		}
	}
}

func TestAttemptsAreBounded(t *testing.T) {
	r := newRig(t, neither)
	r.dest.creates = []delivery.Result{throttled, throttled, throttled, unauthorized}
	id := r.ticket()
	var rep delivery.Report
	for i := range policy.MaxAttempts {
		rep = r.deliver(id)
		if i < policy.MaxAttempts-1 && rep.Outcome != delivery.OutcomeRetried {
			t.Fatalf("attempt %d: %+v", i+1, rep)
		}
		r.advance(time.Hour)
	}
	if rep.Outcome != delivery.OutcomeFailed || rep.State != delivery.Failed {
		t.Fatalf("after %d attempts that created nothing: %+v", policy.MaxAttempts, rep)
	}
	if rep := r.deliver(id); rep.Outcome != delivery.OutcomeSkipped {
		t.Fatalf("a failed delivery was attempted again: %+v", rep)
	}
}

func TestMaybeSentAtTheBoundIsUncertainOrLookedUpOnceMore(t *testing.T) {
	for _, c := range []struct {
		caps    delivery.Capabilities
		lookups []delivery.Result
		want    delivery.State
	}{
		{dedup, nil, delivery.Uncertain},
		{both, []delivery.Result{absent}, delivery.Failed},
		{both, []delivery.Result{found}, delivery.Delivered},
	} {
		r := newRig(t, c.caps)
		r.dest.creates = []delivery.Result{ambiguous, throttled, throttled, throttled}
		r.dest.lookups = c.lookups
		id := r.ticket()
		var rep delivery.Report
		for range policy.MaxAttempts + 1 {
			rep = r.deliver(id)
			if rep.State != delivery.Queued {
				break
			}
			r.advance(rep.NextAt.Sub(r.clock()) + time.Millisecond)
		}
		if rep.State != c.want {
			t.Fatalf("%+v: %+v, want %s", c.caps, rep, c.want)
		}
	}
}

// TestDeadWorkerIsCountedAsMaybeSent: a worker leased the delivery, sent
// the ticket and died before recording what the destination answered;
// the next worker finishes without a duplicate where the destination
// allows it, and leaves it to a person where it cannot tell.
func TestDeadWorkerIsCountedAsMaybeSent(t *testing.T) {
	for _, c := range []struct {
		caps    delivery.Capabilities
		creates []delivery.Result
		lookups []delivery.Result
		want    delivery.State
		sends   int
	}{
		{neither, []delivery.Result{created}, nil, delivery.Uncertain, 1},
		{lookup, []delivery.Result{created}, []delivery.Result{found}, delivery.Delivered, 1},
		{dedup, []delivery.Result{created, created}, nil, delivery.Delivered, 2},
	} {
		r := newRig(t, c.caps)
		r.dest.creates, r.dest.lookups = c.creates, c.lookups
		id := r.ticket()
		tk, d, err := r.store.Lease(context.Background(), id, delivery.Lease{Owner: "dead-worker", From: t0, Until: t0.Add(policy.LeaseFor())})
		if err != nil {
			t.Fatal(err)
		}
		// It marks that it is about to send, sends, and dies before its
		// result is written.
		if err := r.store.Sending(context.Background(), id, "dead-worker", true); err != nil {
			t.Fatal(err)
		}
		r.dest.Create(context.Background(), d.KeyFor(c.caps), tk)
		if rep := r.deliver(id); rep.Outcome != delivery.OutcomeHeld || rep.HeldBy != "dead-worker" {
			t.Fatalf("%+v: while the lease lives: %+v", c.caps, rep)
		}
		r.advance(policy.LeaseFor() + lookup.SettleDelay + time.Second)
		rep := r.deliver(id)
		if rep.State != c.want {
			t.Fatalf("%+v: %+v, want %s", c.caps, rep, c.want)
		}
		if n, _ := r.dest.sent(); n != c.sends {
			t.Fatalf("%+v: %d sends, want %d", c.caps, n, c.sends)
		}
		if d := r.record(id); d.Attempts != 2 {
			t.Fatalf("attempts %d, want 2 (the dead one counts)", d.Attempts)
		}
	}
}

// TestConcurrentWorkersSendOnce races the stream path and the sweep (and
// more) on one delivery: exactly one leases it and sends.
func TestConcurrentWorkersSendOnce(t *testing.T) {
	r := newRig(t, neither)
	r.dest.creates = []delivery.Result{created}
	r.dest.block = make(chan struct{})
	r.dest.entered = make(chan struct{}, 8)
	id := r.ticket()
	var wg sync.WaitGroup
	reps := make([]delivery.Report, 8)
	answered := make(chan struct{}, len(reps))
	for i := range reps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rep, err := r.w.Deliver(context.Background(), id)
			if err != nil {
				t.Error(err)
			}
			reps[i] = rep
			answered <- struct{}{}
		}()
	}
	// Let the one lease holder through once it is at the destination and
	// the others have answered.
	entered, others := 0, 0
wait:
	for timeout := time.After(time.Minute); entered == 0 || others < len(reps)-1; {
		select {
		case <-r.dest.entered:
			entered++
		case <-answered:
			others++
		case <-timeout:
			t.Errorf("after a minute: %d at the destination, %d answered", entered, others)
			break wait
		}
	}
	close(r.dest.block)
	wg.Wait()
	count := map[string]int{}
	for _, rep := range reps {
		count[rep.Outcome]++
	}
	if count[delivery.OutcomeDelivered] != 1 || count[delivery.OutcomeHeld]+count[delivery.OutcomeSkipped] != len(reps)-1 {
		t.Fatalf("outcomes %v", count)
	}
	if n, _ := r.dest.sent(); n != 1 {
		t.Fatalf("%d sends", n)
	}
}

// TestHeldDeliveryIsDeferredToTheSweep: the stream path finds another
// attempt holding the lease and has no time to wait for it.
func TestHeldDeliveryIsDeferredToTheSweep(t *testing.T) {
	r := newRig(t, dedup)
	r.dest.creates = []delivery.Result{created}
	id := r.ticket()
	until := t0.Add(policy.LeaseFor())
	if _, _, err := r.store.Lease(context.Background(), id, delivery.Lease{Owner: "other", From: t0, Until: until}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	rep, err := r.w.Handle(ctx, id)
	if err != nil || rep.Outcome != delivery.OutcomeHeld {
		t.Fatalf("Handle = %+v, %v", rep, err)
	}
	if len(r.due()) != 0 {
		t.Fatal("due before the lease ends")
	}
	r.advance(until.Sub(t0) + time.Second)
	if due := r.due(); len(due) != 1 || due[0] != id {
		t.Fatalf("due after the lease: %v", due)
	}
	sw, err := r.w.Sweep(context.Background())
	if err != nil || sw.Outcomes[delivery.OutcomeDelivered] != 1 {
		t.Fatalf("sweep %+v, %v", sw, err)
	}
	if len(r.due()) != 0 {
		t.Fatal("still due after delivery")
	}
}

// TestHeldDeliveryIsDeferredAtOnce: even with all the time in the world,
// the stream path does not wait for another attempt's lease: it schedules
// the delivery for when the lease ends and returns, so that one slow
// helpdesk request does not hold up the records after it on the shard.
func TestHeldDeliveryIsDeferredAtOnce(t *testing.T) {
	r := newRig(t, dedup)
	id := r.ticket()
	until := t0.Add(policy.LeaseFor())
	if _, _, err := r.store.Lease(context.Background(), id, delivery.Lease{Owner: "other", From: t0, Until: until}); err != nil {
		t.Fatal(err)
	}
	done := make(chan delivery.Report, 1)
	go func() {
		rep, err := r.w.Handle(context.Background(), id) // no deadline
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	select {
	case rep := <-done:
		if rep.Outcome != delivery.OutcomeHeld {
			t.Fatalf("Handle = %+v", rep)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Handle waited for a lease another attempt holds")
	}
	r.advance(until.Sub(t0) + time.Second)
	if due := r.due(); len(due) != 1 || due[0] != id {
		t.Fatalf("due after the lease: %v", due)
	}
}

// TestLostLeaseIsReported: an attempt outlives its lease, another worker
// takes the delivery over; the first cannot record over it.
func TestLostLeaseIsReported(t *testing.T) {
	r := newRig(t, dedup)
	r.dest.creates = []delivery.Result{created, created}
	r.dest.block = make(chan struct{})
	r.dest.entered = make(chan struct{}, 1)
	id := r.ticket()
	done := make(chan delivery.Report)
	go func() {
		rep, err := r.w.Deliver(context.Background(), id)
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	<-r.dest.entered // the first attempt holds the lease, blocked at the destination
	r.advance(policy.LeaseFor() + time.Second)
	second := &delivery.Worker{Store: r.store, Destination: &script{name: "script", caps: dedup, creates: []delivery.Result{created}}, Policy: policy, Now: r.clock}
	if rep, err := second.Deliver(context.Background(), id); err != nil || rep.Outcome != delivery.OutcomeDelivered {
		t.Fatalf("takeover %+v, %v", rep, err)
	}
	close(r.dest.block)
	if rep := <-done; rep.Outcome != delivery.OutcomeLost {
		t.Fatalf("the late attempt %+v", rep)
	}
	if d := r.record(id); d.State != delivery.Delivered || d.Attempts != 2 {
		t.Fatalf("record %+v", d)
	}
}

// TestSweepTakesOnlyDueRetries: the sweep takes a retry once it is due, and
// a new ticket once the stream has had delivery.StreamGrace for its first
// attempt; both count in the queued backlog meanwhile.
func TestSweepTakesOnlyDueRetries(t *testing.T) {
	r := newRig(t, neither)
	r.dest.creates = []delivery.Result{throttled, created, created}
	soon, fresh := r.ticket(), r.ticket()
	_ = fresh // queued for its first attempt: the stream's, not the sweep's
	if rep := r.deliver(soon); rep.Outcome != delivery.OutcomeRetried {
		t.Fatal(rep)
	}
	sw, err := r.w.Sweep(context.Background())
	if err != nil || sw.Due != 0 || sw.Backlog.Queued != 2 {
		t.Fatalf("sweep before due: %+v %v", sw, err)
	}
	r.advance(time.Hour)
	sw, err = r.w.Sweep(context.Background())
	if err != nil || sw.Due != 2 || sw.Outcomes[delivery.OutcomeDelivered] != 2 || sw.Backlog.Queued != 0 {
		t.Fatalf("sweep when due: %+v %v", sw, err)
	}
}

// observer records what the worker reports for metrics.
type observer struct {
	mu       sync.Mutex
	outcomes []string
	auth     []bool
}

func (o *observer) Attempt(outcome string, _ int, _, _ time.Duration, auth bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.outcomes = append(o.outcomes, outcome)
	o.auth = append(o.auth, auth)
}

func (o *observer) Backlog(delivery.Backlog) {}

// TestRefusedCredentialsAreReportedForTheAlarm: a 401 and a 403 are both
// retried and both counted as a credentials problem; a 429 is not.
func TestRefusedCredentialsAreReportedForTheAlarm(t *testing.T) {
	r := newRig(t, neither)
	obs := &observer{}
	r.w.Metrics = obs
	r.dest.creates = []delivery.Result{unauthorized, forbidden, throttled, created}
	id := r.ticket()
	for range 4 {
		rep := r.deliver(id)
		r.advance(rep.NextAt.Sub(r.clock()) + time.Millisecond)
	}
	if !slices.Equal(obs.auth, []bool{true, true, false, false}) || obs.outcomes[3] != delivery.OutcomeDelivered {
		t.Fatalf("observed outcomes %v, auth %v", obs.outcomes, obs.auth)
	}
}

// TestFirstAttemptNeverStrands: a new ticket's first attempt is the
// stream's; should its record never be handled (retries exhausted, the
// function unable to start, a mapping re-created after 24 hours), the sweep
// finds it without a scan once delivery.StreamGrace has passed, and
// delivers it.
func TestFirstAttemptNeverStrands(t *testing.T) {
	r := newRig(t, dedup)
	r.dest.creates = []delivery.Result{created}
	id := r.ticket()
	if due := r.due(); len(due) != 0 {
		t.Fatalf("due at once: %v; the first attempt is the stream's", due)
	}
	r.advance(delivery.StreamGrace - time.Second)
	if due := r.due(); len(due) != 0 {
		t.Fatalf("due inside the grace: %v", due)
	}
	r.advance(2 * time.Second)
	if due := r.due(); len(due) != 1 || due[0] != id {
		t.Fatalf("due after the grace: %v, want [%s]", due, id)
	}
	sw, err := r.w.Sweep(context.Background())
	if err != nil || sw.Outcomes[delivery.OutcomeDelivered] != 1 {
		t.Fatalf("sweep %+v, %v", sw, err)
	}
	if d := r.record(id); d.State != delivery.Delivered {
		t.Fatalf("delivery %+v", d)
	}
	if due := r.due(); len(due) != 0 {
		t.Fatalf("still due after delivery: %v", due)
	}
}

// TestTakeoverWaitsTheResendWait: an attempt that died after it was about
// to send is looked up no sooner than the worker's own ambiguous path
// would look: ResendWait after its lease ended (three timeouts, here
// longer than the settle delay), never at the settle delay alone, when
// its create may still be running at the helpdesk.
func TestTakeoverWaitsTheResendWait(t *testing.T) {
	r := newRig(t, lookup)
	r.dest.lookups = []delivery.Result{found}
	id := r.ticket()
	until := t0.Add(policy.LeaseFor())
	if _, _, err := r.store.Lease(context.Background(), id, delivery.Lease{Owner: "dead-worker", From: t0, Until: until}); err != nil {
		t.Fatal(err)
	}
	if err := r.store.Sending(context.Background(), id, "dead-worker", true); err != nil {
		t.Fatal(err)
	}
	wait := policy.ResendWait(lookup)
	if wait <= lookup.SettleDelay {
		t.Fatalf("the case needs ResendWait (%s) longer than the settle delay (%s)", wait, lookup.SettleDelay)
	}
	after := lookup.SettleDelay + (wait-lookup.SettleDelay)/2
	r.advance(until.Sub(t0) + after)
	rep := r.deliver(id)
	if r.dest.looked != 0 || rep.Outcome != delivery.OutcomeRetried || !rep.NextAt.Equal(until.Add(wait)) {
		t.Fatalf("takeover %s after the dead lease: %+v after %d lookups; want retried at the lease's end + ResendWait (%s), no lookup",
			after, rep, r.dest.looked, until.Add(wait).Format(time.TimeOnly))
	}
	r.advance(rep.NextAt.Sub(r.clock()))
	if rep := r.deliver(id); rep.Outcome != delivery.OutcomeDelivered || r.dest.looked != 1 {
		t.Fatalf("at ResendWait: %+v after %d lookups", rep, r.dest.looked)
	}
	if n, _ := r.dest.sent(); n != 0 {
		t.Fatalf("%d creates, want none (the lookup found it)", n)
	}
}
