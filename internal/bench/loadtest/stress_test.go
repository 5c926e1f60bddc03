package loadtest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/bench/loadtest"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/testing/suitetest"
)

// conflictHold is how long each transaction holds its items under the
// conflict rule: a typical transactional write on DynamoDB.
const conflictHold = 15 * time.Millisecond

// TestStressUnderDynamoDBRules is a short make stress: two server
// processes on one store behind the fault proxy applying DynamoDB's
// transaction conflict rule and losing the answers of 5% of the writes it
// applied, real cost-9 nonces, a mixed run spread over both, the seed's
// burst, and every ticket delivered to a local helpdesk that neither
// deduplicates nor can be looked up and misbehaves on 20% of its creates.
// Nothing is lost or duplicated (calls, store, helpdesk), every burst ends
// one created and nine deduplicated with no busy answer, and no delivery
// is left uncertain whose key never reached the helpdesk.
func TestStressUnderDynamoDBRules(t *testing.T) {
	if dynamotest.External() {
		t.Skip("the stress run starts its own store")
	}
	sum := runStress(t, 4*time.Minute, loadtest.StressOptions{
		Server: serverBin, Servers: 2, Calls: 240, Ops: 80, Concurrency: 16, Seed: suitetest.Seed(t),
		Cost: 9, Nonces: 2, Hold: conflictHold, LoseRate: 0.05, Bursts: 3,
		Destination: "webhook", FaultRate: 0.2, DedupWindow: 0, Lookup: false, SettleTimeout: time.Minute,
	})
	d := sum.Deliveries
	if d == nil || d.Duplicated != 0 || d.UncertainNeverSent != 0 || d.Tickets != sum.Calls.Operations+sum.Burst.Rounds {
		t.Fatalf("deliveries %+v for %d operations and %d bursts", d, sum.Calls.Operations, sum.Burst.Rounds)
	}
	if sum.Burst.Rounds != 3 || sum.Burst.Busy != 0 || sum.Burst.Clean != 3 {
		t.Fatalf("burst %s", sum.Burst)
	}
	if sum.Conflicts.Cancelled == 0 || sum.Conflicts.Lost == 0 {
		t.Fatalf("the rule did nothing: %+v", sum.Conflicts)
	}
	if d.Faults == 0 {
		t.Fatal("the helpdesk injected no fault")
	}
}

// TestSeedBurstThroughTwoServerProcesses is the seed's burst check through
// two real processes: ten identical create_ticket calls at once, five
// through each of two oncecall servers on one store behind the conflict
// rule, real cost-9 nonces, end as one created and nine deduplicated,
// never busy, in every round, and the store holds one ticket per round.
func TestSeedBurstThroughTwoServerProcesses(t *testing.T) {
	endpoint, _ := dynamotest.Endpoint(t)
	proxy := dynamotest.NewProxy(t, endpoint)
	seed := suitetest.Seed(t)
	rule := &dynamotest.Conflicts{Hold: conflictHold, Rand: rand.New(rand.NewPCG(seed, seed))}
	proxy.SetConflicts(rule)
	table := "oncecall-test-" + dynamotest.RandomHex(6)
	t.Cleanup(func() { dropTable(t, endpoint, table) })
	env := []string{"DYNAMODB_ENDPOINT=" + proxy.URL, "TABLE_NAME=" + table}
	a := startServer(t, env...)
	b := startServer(t, env...)
	hash, err := nonce.Generate(localdb.DemoHookKey, 9)
	if err != nil {
		t.Fatal(err)
	}
	hc := loadtest.NewClient(loadtest.BurstCalls)
	defer hc.CloseIdleConnections()
	urls := []string{a.URL + "/callback", b.URL + "/callback"}
	const rounds = 5
	var rep loadtest.BurstReport
	for round := range rounds {
		rep.Add(loadtest.Burst(context.Background(), hc, urls, hash, fmt.Sprintf("burst-two-processes-%d", round)))
		if rep.Clean != round+1 {
			t.Fatalf("round %d: %s (%v); conflict rule %+v", round, rep, rep.Examples, rule.Stats())
		}
	}
	if rep.Busy != 0 || rep.Created != rounds || rep.Deduplicated != rounds*(loadtest.BurstCalls-1) {
		t.Fatalf("%s", rep)
	}
	store := &dynamotest.Env{Client: dynamotest.NewClient(t, endpoint, nil), Table: table, Endpoint: endpoint}
	if n := store.Count(t, "ticket"); n != rounds {
		t.Fatalf("%d tickets for %d bursts", n, rounds)
	}
	t.Logf("%s; conflict rule %+v", rep, rule.Stats())
}

// TestCountNeverSent: an uncertain delivery whose key (or a resend's key)
// reached the helpdesk is uncertain for a reason; one whose keys never
// did is a false alarm, counted and failing the check.
func TestCountNeverSent(t *testing.T) {
	sent := &delivery.Record{State: delivery.Uncertain, Key: "k-sent"}
	resent := &delivery.Record{State: delivery.Uncertain, Key: "k-old", Audit: []delivery.Decision{{Action: delivery.ActionNotCreated}}}
	never := &delivery.Record{State: delivery.Uncertain, Key: "k-never"}
	done := &delivery.Record{State: delivery.Delivered, Key: "k-done"}
	keys := map[string]int{"k-sent": 2, delivery.ResendKey("k-old", 1): 1}
	var r loadtest.DeliveryReport
	r.CountNeverSent(map[string]*delivery.Record{"a": sent, "b": resent, "c": never, "d": done}, keys)
	if r.Uncertain != 3 || r.UncertainNeverSent != 1 || r.Check() == nil {
		t.Fatalf("uncertain %d, never sent %d, check %v; want 3, 1 and an error", r.Uncertain, r.UncertainNeverSent, r.Check())
	}
}

// runStress runs o within limit, logs its report and fails t on an error
// or a broken guarantee (StressSummary.Check).
func runStress(t *testing.T, limit time.Duration, o loadtest.StressOptions) loadtest.StressSummary {
	t.Helper()
	var out strings.Builder
	o.Out = &out
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	sum, err := loadtest.RunStress(ctx, o)
	t.Logf("\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	if err := sum.Check(); err != nil {
		t.Fatal(err)
	}
	return sum
}
