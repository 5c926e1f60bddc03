package callback_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/dev/dynamotest"
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
	r.call(create("user-a", "warm-up", signIn)) // caches alice
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
