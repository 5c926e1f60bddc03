package callback_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// contentionHold is how long each transaction holds its items under the
// conflict rule: a typical transactional write on DynamoDB.
const contentionHold = 15 * time.Millisecond

// TestSeedBurstUnderTheConflictRule is the design note's own check, on
// DynamoDB's rules: ten identical create_ticket calls at once, every
// transaction holding its items for 15 ms as on DynamoDB, end as one
// created and nine deduplicated, never busy, in every round.
func TestSeedBurstUnderTheConflictRule(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy), withRealSleep())
	proxy.Conflicts = &dynamotest.Conflicts{Hold: contentionHold}
	r.call(create("user-a", "warm-up", signIn))
	const rounds, calls = 5, 10
	for round := range rounds {
		rid := fmt.Sprintf("burst-%d", round)
		var wg sync.WaitGroup
		replies := make([]reply, calls)
		for i := range calls {
			wg.Go(func() { replies[i] = r.call(create("user-a", rid, signIn)) })
		}
		wg.Wait()
		created, dedup := 0, 0
		for _, p := range replies {
			switch kind(p) {
			case "created":
				created++
			case "deduplicated":
				dedup++
			default:
				t.Errorf("round %d: answer %d %s", round, p.status, p.raw)
			}
		}
		if created != 1 || dedup != calls-1 {
			t.Fatalf("round %d: %d created, %d deduplicated; want 1 and %d (conflict rule: %+v)", round, created, dedup, calls-1, proxy.Conflicts.Stats())
		}
	}
	if n := r.tickets(); n != rounds+1 {
		t.Fatalf("%d tickets, want %d", n, rounds+1)
	}
}

// TestUserChangeUnderAFlood: while one user's calls run at full rate (16
// callers, every transaction holding its items for 15 ms as on DynamoDB),
// an operator disables the user. The change commits within the store's
// retry budget (how long that takes depends on the machine, and is
// logged), and every call that starts after it is refused; no call was
// answered busy or failed meanwhile.
func TestUserChangeUnderAFlood(t *testing.T) {
	var proxy *dynamotest.Proxy
	r := newRig(t, viaProxy(&proxy), withRealSleep())
	proxy.Conflicts = &dynamotest.Conflicts{Hold: contentionHold}
	r.call(create("user-a", "warm-up", signIn))
	admin := dynamo.NewAdmin(dynamotest.NewClient(t, proxy.URL, nil), r.env.Table)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	outcomes := map[string]int{}
	const callers = 16
	answered := make(chan struct{}, callers)
	for c := range callers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				p := r.call(create("user-a", fmt.Sprintf("flood-%d-%d", c, i), signIn))
				mu.Lock()
				outcomes[kind(p)]++
				mu.Unlock()
				if i == 0 {
					answered <- struct{}{}
				}
			}
		})
	}
	// The flood runs: every caller has started, and a first call has
	// been answered (the callers' first calls contend for the user's
	// record, so waiting for all of them would take seconds).
	<-answered
	read, err := admin.User(context.Background(), "user-a")
	if err != nil {
		t.Fatal(err)
	}
	to := read.User
	to.Active = false
	start := time.Now()
	if _, err := admin.UpdateUser(context.Background(), read, to); err != nil {
		t.Fatalf("disabling the user under a flood: %v", err)
	}
	took := time.Since(start)
	for i := range 20 {
		if p := r.call(create("user-a", fmt.Sprintf("after-%d", i), signIn)); p.status != 403 || p.code() != "user_disabled" {
			t.Errorf("a call started after the change: %d %s", p.status, p.raw)
		}
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if outcomes["created"] == 0 {
		t.Fatalf("no call of the flood was created: %v", outcomes)
	}
	for k, n := range outcomes {
		if k != "created" && k != "user_disabled" {
			t.Errorf("%d calls of the flood answered %s", n, k)
		}
	}
	t.Logf("flood: %v; the change took %v; conflict rule: %+v", outcomes, took, proxy.Conflicts.Stats())
}
