package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/webhook"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// TestLostWriteAnswers: the store applies the worker's lease (or its mark,
// or its result) and the answer is lost; the store sends the write again, its
// condition now fails against the worker's own write. That is success, not
// a lease held by someone else nor a lost lease: against a helpdesk that
// can neither deduplicate nor be looked up, the ticket ends delivered with
// one create, never uncertain.
func TestLostWriteAnswers(t *testing.T) {
	for name, lost := range map[string][]dynamotest.Fault{
		"lease":  {{AfterCommit: true}},
		"mark":   {{}, {AfterCommit: true}},
		"finish": {{}, {}, {AfterCommit: true}},
		"all":    {{AfterCommit: true}, {}, {AfterCommit: true}, {}, {AfterCommit: true}},
	} {
		t.Run(name, func(t *testing.T) {
			r, proxy, hd := newLostRig(t)
			id := r.ticket()
			proxy.Inject("UpdateItem", lost...)
			rep := r.deliver(id)
			if rep.Outcome != delivery.OutcomeDelivered {
				t.Fatalf("outcome %s, want delivered", rep.Outcome)
			}
			if d := r.record(id); d.State != delivery.Delivered || d.MaybeSent || d.Attempts != 1 || d.LeaseOwner != "" {
				t.Fatalf("delivery %+v", d)
			}
			if n := hd.Counts().CreateRequests; n != 1 {
				t.Fatalf("%d creates at the helpdesk, want 1", n)
			}
			// Nothing is left for the sweep, and a stream record coming
			// again sends nothing.
			r.advance(time.Hour)
			if rep := r.deliver(id); rep.Outcome != delivery.OutcomeSkipped || hd.Counts().CreateRequests != 1 {
				t.Fatalf("a later attempt: %s, %d creates", rep.Outcome, hd.Counts().CreateRequests)
			}
		})
	}
}

// TestAnAttemptThatNeverSentIsRetried: the worker's lease applies but its
// answer stays lost past the store's retry budget, or the read of the
// leased ticket fails. The worker sent nothing, and knows it: the delivery
// is retried and ends delivered with one create, never uncertain, even
// against a helpdesk that can neither deduplicate nor be looked up and
// even when the next attempt comes only after the lease has ended.
func TestAnAttemptThatNeverSentIsRetried(t *testing.T) {
	lost := dynamotest.Fault{AfterCommit: true}
	broken := dynamotest.Fault{Error: "InternalServerError", Status: 500}
	budget := func(f dynamotest.Fault) []dynamotest.Fault {
		out := make([]dynamotest.Fault, dynamo.MaxAttempts)
		for i := range out {
			out[i] = f
		}
		return out
	}
	for name, c := range map[string]struct{ updates, gets []dynamotest.Fault }{
		"lease answer lost past the retry budget":    {updates: budget(lost)},
		"read of the leased ticket fails":            {gets: budget(broken)},
		"lease answer lost and the read fails, both": {updates: budget(lost), gets: budget(broken)},
	} {
		t.Run(name, func(t *testing.T) {
			r, proxy, hd := newLostRig(t)
			id := r.ticket()
			proxy.Inject("UpdateItem", c.updates...)
			proxy.Inject("GetItem", c.gets...)
			var rep delivery.Report
			for range 10 {
				var err error
				rep, err = r.w.Deliver(context.Background(), id)
				if err == nil && rep.State.Final() {
					break
				}
				// As the stream (a failed record comes again) or the sweep
				// would, at worst once the lease has ended.
				r.advance(policy.LeaseFor() + time.Second)
			}
			d := r.record(id)
			if rep.State != delivery.Delivered || d.State != delivery.Delivered || d.MaybeSent {
				t.Fatalf("ended %+v, delivery %+v: want delivered, never maybe sent", rep, d)
			}
			if n := hd.Counts().CreateRequests; n != 1 {
				t.Fatalf("%d creates at the helpdesk, want 1", n)
			}
		})
	}
}

// newLostRig is a worker delivering to the local helpdesk, which can
// neither deduplicate nor be looked up, over a store behind the fault
// proxy whose retries wait nothing.
func newLostRig(t *testing.T) (*rig, *dynamotest.Proxy, *helpdesk.Server) {
	t.Helper()
	env := dynamotest.New(t)
	proxy := dynamotest.NewProxy(t, env.Endpoint)
	store := dynamo.New(dynamotest.NewClient(t, proxy.URL, nil), env.Table, dynamo.WithClock(func() time.Time { return t0 }),
		dynamo.WithSleep(func(context.Context, time.Duration) error { return nil }))
	r := &rig{t: t, env: env, store: store, now: t0}
	seed(t, store)
	caps := delivery.Capabilities{}
	hd, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{Capabilities: caps, Now: r.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hd.Close() })
	dest, err := webhook.New(hd.WebhookURL(), webhook.Options{Capabilities: caps, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dest.CloseIdleConnections)
	r.w = &delivery.Worker{Store: store, Destination: dest, Policy: policy, Now: r.clock, Rand: maxDelay}
	return r, proxy, hd
}

// TestADeadLeaseIsMaybeSentOnlyWhenMarked: a lease whose attempt never
// was about to send ends without a result; the next attempt must not
// count it as one that may have sent, or a helpdesk that can neither
// deduplicate nor be looked up leaves the ticket uncertain with no create
// ever made.
func TestADeadLeaseIsMaybeSentOnlyWhenMarked(t *testing.T) {
	broken := dynamotest.Fault{Error: "InternalServerError", Status: 500}
	for name, c := range map[string]struct {
		// run is the attempt that dies; it returns the creates it made.
		run func(t *testing.T, r *rig, proxy *dynamotest.Proxy, hd *helpdesk.Server, id string)
	}{
		// Its only create is answered 429, and its result cannot be
		// recorded: the lease stays until it ends.
		"a create answered 429, then the result not recorded": {func(t *testing.T, r *rig, proxy *dynamotest.Proxy, hd *helpdesk.Server, id string) {
			if err := hd.Inject(helpdesk.Fault{Kind: helpdesk.RateLimit}); err != nil {
				t.Fatal(err)
			}
			proxy.Inject("UpdateItem", dynamotest.Fault{}, dynamotest.Fault{}, broken, broken, broken)
			if _, err := r.w.Deliver(context.Background(), id); err == nil {
				t.Fatal("the result was recorded through a broken store")
			}
		}},
		// The lease's write fails at every try and the worker gives up on
		// it; the write lands afterwards (held in the network), a lease
		// that no attempt acts on.
		"a lease that lands after its attempt gave up": {func(t *testing.T, r *rig, proxy *dynamotest.Proxy, _ *helpdesk.Server, id string) {
			proxy.Inject("UpdateItem", broken, broken, broken)
			if _, err := r.w.Deliver(context.Background(), id); err == nil {
				t.Fatal("leased through a broken store")
			}
			if _, _, err := r.store.Lease(context.Background(), id, delivery.Lease{Owner: "late", From: t0, Until: t0.Add(policy.LeaseFor())}); err != nil {
				t.Fatalf("the late lease: %v", err)
			}
		}},
	} {
		t.Run(name, func(t *testing.T) {
			r, proxy, hd := newLostRig(t)
			id := r.ticket()
			c.run(t, r, proxy, hd, id)
			if n := len(hd.TicketsByExternalID(id)); n != 0 {
				t.Fatalf("%d tickets at the helpdesk after the dead attempt, want 0", n)
			}
			r.advance(policy.LeaseFor() + time.Minute)
			rep := r.deliver(id)
			d := r.record(id)
			if rep.State != delivery.Delivered || d.MaybeSent {
				t.Fatalf("after the dead lease: %+v, delivery %+v; want delivered, never maybe sent", rep, d)
			}
			if n := len(hd.TicketsByExternalID(id)); n != 1 {
				t.Fatalf("%d tickets at the helpdesk, want 1", n)
			}
		})
	}
}
