package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// shortPolicy's lease leaves its requests 2 × 300 ms: a lease write that
// takes longer than one request's timeout leaves no room for one.
var shortPolicy = delivery.Policy{Timeout: 300 * time.Millisecond, MaxAttempts: 4, MaxAge: 24 * time.Hour, BaseBackoff: time.Second, MaxBackoff: time.Minute}

// TestASlowLeaseSendsNothingOutsideIt: the lease's write reaches the
// store late (slow, or throttled and sent again with the :until fixed
// before its first try), so the lease it takes ends sooner after it than
// the worker would otherwise count. The worker counts the lease's time
// from before the write: with less than one request's timeout left it
// sends nothing, and no request of its can still run once another attempt
// may take the delivery over. The next attempt delivers it, and nothing
// counts as maybe sent. A write that never comes back is abandoned within
// the lease.
func TestASlowLeaseSendsNothingOutsideIt(t *testing.T) {
	budget := shortPolicy.LeaseFor() - delivery.LeaseMargin
	for name, faults := range map[string][]dynamotest.Fault{
		"slow":            {{Delay: budget - shortPolicy.Timeout/2}},
		"throttled twice": {{Delay: budget / 3, Error: "ThrottlingException"}, {Delay: budget / 3, Error: "ThrottlingException"}},
		"never answered":  {{Hang: true}},
	} {
		t.Run(name, func(t *testing.T) {
			r, proxy := newSlowRig(t)
			r.dest.creates = []delivery.Result{created}
			id := r.ticket()
			proxy.Inject("UpdateItem", faults...)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			began := time.Now()
			rep, err := r.w.Deliver(ctx, id)
			took := time.Since(began)
			if n, _ := r.dest.sent(); n != 0 {
				t.Fatalf("%d creates sent after a lease write of %s (the lease left %s for requests): %+v, %v",
					n, took.Round(time.Millisecond), budget, rep, err)
			}
			if took > budget+dynamo.ReleaseTimeout {
				t.Fatalf("the attempt took %s: the lease's write is not bounded", took.Round(time.Millisecond))
			}
			if err == nil && (rep.Outcome != delivery.OutcomeRetried || rep.Code != delivery.CodeLeaseShort) {
				t.Fatalf("report %+v, want retried (%s)", rep, delivery.CodeLeaseShort)
			}
			d := r.record(id)
			if d.MaybeSent {
				t.Fatalf("an attempt that sent nothing counts as maybe sent: %+v", d)
			}
			// The next attempts (another lease_short only on a machine so
			// loaded that a lease write takes a request's timeout).
			for i := 0; ; i++ {
				r.advance(shortPolicy.LeaseFor() + time.Minute)
				rep := r.deliver(id)
				if rep.Outcome == delivery.OutcomeDelivered {
					break
				}
				if rep.Code != delivery.CodeLeaseShort || i == 3 {
					t.Fatalf("the next attempt: %+v", rep)
				}
			}
			if n, _ := r.dest.sent(); n != 1 {
				t.Fatalf("%d creates in all, want 1", n)
			}
		})
	}
}

// newSlowRig is a worker with shortPolicy over a store behind the fault
// proxy (its retries wait nothing: the faults' delays are the time spent),
// delivering to a scripted destination that neither deduplicates nor can
// be looked up.
func newSlowRig(t *testing.T) (*rig, *dynamotest.Proxy) {
	t.Helper()
	env := dynamotest.New(t)
	proxy := dynamotest.NewProxy(t, env.Endpoint)
	store := dynamo.New(dynamotest.NewClient(t, proxy.URL, nil), env.Table,
		dynamo.WithSleep(func(context.Context, time.Duration) error { return nil }))
	r := &rig{t: t, env: env, store: store, now: t0, dest: &script{name: "script", caps: neither}}
	seed(t, store)
	r.w = &delivery.Worker{Store: store, Destination: r.dest, Policy: shortPolicy, Now: r.clock, Rand: maxDelay}
	return r, proxy
}
