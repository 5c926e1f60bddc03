package dynamo_test

import (
	"context"
	"errors"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

var alice = identity.User{ExternalID: "user-a", Tenant: "tenant-a", Name: "alice", Active: true, Functions: []string{ticket.CreateName, ticket.GetName}}

type fixture struct {
	env   *dynamotest.Env
	api   dynamo.API
	store *dynamo.Store
	now   time.Time
}

func newFixture(t *testing.T, api func(*dynamotest.Env) dynamo.API) *fixture {
	t.Helper()
	env := dynamotest.New(t)
	f := &fixture{env: env, now: t0}
	var a dynamo.API = env.Client
	if api != nil {
		a = api(env)
	}
	f.api = a
	f.store = f.reopen(t)
	if err := f.store.PutUser(context.Background(), alice); err != nil {
		t.Fatal(err)
	}
	env.Requests.Reset()
	return f
}

// reopen returns another Store over the fixture's table and client, as
// another container would open it.
func (f *fixture) reopen(testing.TB) *dynamo.Store {
	return dynamo.New(f.api, f.env.Table, dynamo.WithClock(func() time.Time { return f.now }), dynamo.WithSleep(noSleep))
}

// noSleep skips the waits between attempts.
func noSleep(context.Context, time.Duration) error { return nil }

// newProxied is newFixture with the store client behind a fault proxy.
func newProxied(t *testing.T) (*fixture, *dynamotest.Proxy) {
	t.Helper()
	var proxy *dynamotest.Proxy
	f := newFixture(t, func(env *dynamotest.Env) dynamo.API {
		proxy = dynamotest.NewProxy(t, env.Endpoint)
		return dynamotest.NewClient(t, proxy.URL, env.Requests)
	})
	return f, proxy
}

// claim builds the record and ticket of one create_ticket call.
func (f *fixture) claim(key string) (idempotency.Record, ticket.Ticket) {
	id := ticket.NewID()
	rec := idempotency.Record{
		Key: key, UserID: alice.ExternalID, Tenant: alice.Tenant, Function: ticket.CreateName,
		State: idempotency.Completed, Fingerprint: "fp-" + key, TicketID: id,
		Result:    []byte(`{"status":"created","ticket_id":"` + id + `"}`),
		CreatedAt: f.now, ExpiresAt: f.now.Add(time.Hour),
	}
	tk := ticket.Ticket{ID: id, Tenant: alice.Tenant, UserID: alice.ExternalID, Title: "t", Priority: "normal",
		CreatedAt: f.now, Function: ticket.CreateName, OperationKey: key, RequestID: "r-1"}
	return rec, tk
}

func TestCreateWritesOperationAndTicketInOneRequest(t *testing.T) {
	f := newFixture(t, nil)
	rec, tk := f.claim("k1")
	existing, taken, err := f.store.Create(context.Background(), rec, tk, nil)
	if err != nil || taken {
		t.Fatalf("Create = %v, %v", existing, err)
	}
	if n := f.env.Requests.Load(); n != 1 {
		t.Errorf("a new claim took %d store requests, want 1", n)
	}
	got, err := f.store.Operation(context.Background(), "k1")
	if err != nil || got == nil {
		t.Fatalf("Operation = %v, %v", got, err)
	}
	if got.TicketID != tk.ID || got.State != idempotency.Completed || string(got.Result) != string(rec.Result) || got.Fingerprint != rec.Fingerprint {
		t.Errorf("stored record %+v", got)
	}
	if !got.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Errorf("expires_at = %v, want %v", got.ExpiresAt, t0.Add(time.Hour))
	}
	// The TTL attribute is a number of epoch seconds, as DynamoDB's TTL requires.
	out, err := f.env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &f.env.Table,
		Key: map[string]types.AttributeValue{dynamo.PartitionKey: &types.AttributeValueMemberS{Value: "op#k1"}}})
	if err != nil {
		t.Fatal(err)
	}
	ttl, ok := out.Item[dynamo.TTLAttribute].(*types.AttributeValueMemberN)
	if !ok || ttl.Value != strconv.FormatInt(t0.Add(time.Hour).Unix(), 10) {
		t.Errorf("TTL attribute = %#v", out.Item[dynamo.TTLAttribute])
	}
	saved, err := f.store.Ticket(context.Background(), tk.ID)
	if err != nil || saved == nil || saved.Title != "t" || saved.Tenant != "tenant-a" || saved.OperationKey != "k1" {
		t.Fatalf("ticket = %+v, %v", saved, err)
	}
	if n := f.env.Count(t, "ticket"); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}

func TestSecondClaimReturnsTheFirst(t *testing.T) {
	f := newFixture(t, nil)
	rec, tk := f.claim("k1")
	if _, _, err := f.store.Create(context.Background(), rec, tk, nil); err != nil {
		t.Fatal(err)
	}
	rec2, tk2 := f.claim("k1")
	existing, taken, err := f.store.Create(context.Background(), rec2, tk2, nil)
	if err != nil || !taken {
		t.Fatalf("Create = %v, %v", existing, err)
	}
	if existing.TicketID != tk.ID {
		t.Errorf("existing names ticket %s, want %s", existing.TicketID, tk.ID)
	}
	if n := f.env.Count(t, "ticket"); n != 1 {
		t.Errorf("%d tickets after a repeat, want 1", n)
	}
}

// TestReplayRoundTrips counts store requests for a repeated claim: one, since
// the store returns the old item with the cancellation, as DynamoDB does.
func TestReplayRoundTrips(t *testing.T) {
	f := newFixture(t, nil)
	rec, tk := f.claim("k1")
	if _, _, err := f.store.Create(context.Background(), rec, tk, nil); err != nil {
		t.Fatal(err)
	}
	f.env.Requests.Reset()
	rec2, tk2 := f.claim("k1")
	existing, taken, err := f.store.Create(context.Background(), rec2, tk2, nil)
	if err != nil || !taken || existing.TicketID != tk.ID {
		t.Fatalf("Create = %+v, %v", existing, err)
	}
	if got := f.env.Requests.Load(); got != 1 {
		t.Errorf("replay took %d requests, want 1", got)
	}
}

func TestExpiredClaimIsReclaimedAtTheExactBoundary(t *testing.T) {
	f := newFixture(t, nil)
	rec, tk := f.claim("k1")
	if _, _, err := f.store.Create(context.Background(), rec, tk, nil); err != nil {
		t.Fatal(err)
	}
	// At the expiry second the claim still holds.
	f.now = rec.ExpiresAt
	rec2, tk2 := f.claim("k1")
	existing, taken, err := f.store.Create(context.Background(), rec2, tk2, nil)
	if err != nil || !taken || existing.TicketID != tk.ID {
		t.Fatalf("at expiry: Create = %+v, %v; want the first claim", existing, err)
	}
	// One second later it is gone although the item is still present.
	f.now = rec.ExpiresAt.Add(time.Second)
	rec3, tk3 := f.claim("k1")
	existing, taken, err = f.store.Create(context.Background(), rec3, tk3, nil)
	if err != nil || taken {
		t.Fatalf("after expiry: Create = %+v, %v; want a new claim", existing, err)
	}
	got, _ := f.store.Operation(context.Background(), "k1")
	if got.TicketID != tk3.ID {
		t.Errorf("operation names %s, want the new ticket %s", got.TicketID, tk3.ID)
	}
	if n := f.env.Count(t, "ticket"); n != 2 {
		t.Errorf("%d tickets, want 2 (one per window)", n)
	}
}

// TestFailureInsideTransactionWritesNothing makes the last action of the
// transaction fail (its ticket id is taken) after the operation Put has been
// applied, and checks that the operation was rolled back with it.
func TestFailureInsideTransactionWritesNothing(t *testing.T) {
	f := newFixture(t, nil)
	rec, tk := f.claim("k-other")
	if _, _, err := f.store.Create(context.Background(), rec, tk, nil); err != nil {
		t.Fatal(err)
	}
	rec2, tk2 := f.claim("k2")
	// The colliding ticket is a copy of the first one under the new id, put
	// behind oncecall's back.
	f.env.CopyItem(t, "ticket#"+tk.ID, "ticket#"+tk2.ID)
	if _, _, err := f.store.Create(context.Background(), rec2, tk2, nil); !errors.Is(err, ticket.ErrExists) {
		t.Fatalf("Create over an existing ticket = %v, want the ticket Put's failure", err)
	}
	if got, _ := f.store.Operation(context.Background(), "k2"); got != nil {
		t.Fatalf("operation k2 exists after a cancelled transaction: %+v", got)
	}
	saved, _ := f.store.Ticket(context.Background(), tk2.ID)
	if saved == nil || saved.OperationKey != "k-other" {
		t.Errorf("the existing ticket was overwritten: %+v", saved)
	}
	// The next identical call creates exactly one.
	rec3, tk3 := f.claim("k2")
	if existing, taken, err := f.store.Create(context.Background(), rec3, tk3, nil); err != nil || taken {
		t.Fatalf("retry: %v %v", existing, err)
	}
	if n := f.env.Count(t, "ticket"); n != 3 {
		t.Errorf("%d tickets, want 3 (the first, its copy, the retry's)", n)
	}
}

func TestPendingIsNeverTakenOver(t *testing.T) {
	f := newFixture(t, nil)
	pending := idempotency.Record{Key: "k1", UserID: alice.ExternalID, Tenant: alice.Tenant, Function: ticket.CreateName,
		State: idempotency.Pending, Fingerprint: "fp-k1", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := f.store.PutOperation(context.Background(), pending); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		rec, tk := f.claim("k1")
		existing, taken, err := f.store.Create(context.Background(), rec, tk, nil)
		if err != nil || !taken || existing.State != idempotency.Pending {
			t.Fatalf("attempt %d: Create = %+v, %v", i, existing, err)
		}
	}
	if n := f.env.Count(t, "ticket"); n != 0 {
		t.Errorf("%d tickets written over a pending operation", n)
	}
	// A pending record without expiry is held for good.
	pending.Key, pending.ExpiresAt = "k2", time.Time{}
	if err := f.store.PutOperation(context.Background(), pending); err != nil {
		t.Fatal(err)
	}
	f.now = t0.Add(10 * 365 * 24 * time.Hour)
	rec, tk := f.claim("k2")
	if existing, taken, err := f.store.Create(context.Background(), rec, tk, nil); err != nil || !taken || existing.State != idempotency.Pending {
		t.Fatalf("pending without expiry: Create = %+v, %v", existing, err)
	}
}

func repeatFault(f dynamotest.Fault, n int) []dynamotest.Fault {
	out := make([]dynamotest.Fault, n)
	for i := range out {
		out[i] = f
	}
	return out
}

func TestBusyAfterBoundedRetries(t *testing.T) {
	conflict := dynamotest.Fault{Error: "TransactionCanceledException", Reasons: []string{"TransactionConflict", "None"}}
	throttle := dynamotest.Fault{Error: "ThrottlingException"}
	for name, fault := range map[string]dynamotest.Fault{"conflict": conflict, "throttling": throttle,
		"capacity": {Error: "ProvisionedThroughputExceededException"}} {
		t.Run(name, func(t *testing.T) {
			f, proxy := newProxied(t)
			// Without a deadline (the admin tool's calls), contention is
			// tried dynamo.MaxBusyAttempts times.
			faults := make([]dynamotest.Fault, dynamo.MaxBusyAttempts)
			for i := range faults {
				faults[i] = fault
			}
			proxy.Inject("TransactWriteItems", faults...)
			rec, tk := f.claim("k1")
			if _, _, err := f.store.Create(context.Background(), rec, tk, nil); !errors.Is(err, idempotency.ErrBusy) {
				t.Fatalf("Create = %v, want ErrBusy", err)
			}
			if got := proxy.Seen("TransactWriteItems"); got != dynamo.MaxBusyAttempts {
				t.Errorf("%d attempts, want %d", got, dynamo.MaxBusyAttempts)
			}
			if f.env.Count(t, "ticket") != 0 {
				t.Error("a busy claim wrote a ticket")
			}
			// With a deadline, until the next wait would pass it: far more
			// than dynamo.MaxAttempts, and never past it. The deadline is
			// a second, so that even on a busy machine (an attempt through
			// the proxy taking tens of milliseconds) it allows more; the
			// margin past it, for the last attempt's answer cut at the
			// deadline to come back, is another second.
			const deadline = time.Second
			proxy.Inject("TransactWriteItems", repeatFault(fault, 10000)...)
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			seen, start := proxy.Seen("TransactWriteItems"), time.Now()
			rec, tk = f.claim("k1")
			_, _, err := f.store.Create(ctx, rec, tk, nil)
			cancel()
			if took := time.Since(start); !errors.Is(err, idempotency.ErrBusy) || took > 2*deadline {
				t.Fatalf("Create with a deadline of %v = %v after %v, want ErrBusy by the deadline", deadline, err, took)
			}
			if got := proxy.Seen("TransactWriteItems") - seen; got <= dynamo.MaxAttempts {
				t.Errorf("%d attempts within the deadline, want more than %d", got, dynamo.MaxAttempts)
			}
			proxy.Clear("TransactWriteItems")
			// One fault fewer than the budget: the last attempt goes through.
			proxy.Inject("TransactWriteItems", faults[:dynamo.MaxBusyAttempts-1]...)
			rec, tk = f.claim("k1")
			if existing, taken, err := f.store.Create(context.Background(), rec, tk, nil); err != nil || taken {
				t.Fatalf("Create after transient faults = %v, %v", existing, err)
			}
			if n := f.env.Count(t, "ticket"); n != 1 {
				t.Errorf("%d tickets, want 1", n)
			}
		})
	}
}

func TestStoreHangEndsAtTheDeadline(t *testing.T) {
	f, proxy := newProxied(t)
	proxy.Inject("TransactWriteItems", dynamotest.Fault{Hang: true})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	rec, tk := f.claim("k1")
	_, _, err := f.store.Create(ctx, rec, tk, nil)
	if !errors.Is(err, idempotency.ErrBusy) {
		t.Fatalf("Create = %v, want ErrBusy", err)
	}
	if waited := time.Since(start); waited > 5*time.Second {
		t.Errorf("returned after %v, long past the deadline", waited)
	}
}

func TestLostResponseAfterCommitIsRecovered(t *testing.T) {
	f, proxy := newProxied(t)
	// The first attempt commits but its answer is lost; the store's own
	// retry then finds the claim it made.
	proxy.Inject("TransactWriteItems", dynamotest.Fault{AfterCommit: true})
	rec, tk := f.claim("k1")
	existing, taken, err := f.store.Create(context.Background(), rec, tk, nil)
	if err != nil || taken {
		t.Fatalf("Create = %+v, %v; want the call's own claim reported as created", existing, err)
	}
	// The store answers the retry from its ClientRequestToken, as DynamoDB
	// does: success, nothing written twice, no read.
	want := map[string]int64{"TransactWriteItems": 2}
	if got := f.env.Requests.Operations(); !maps.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	if n := f.env.Count(t, "ticket"); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}

// TestLostAnswerAfterConflictsIsRecovered: a create that met
// contention twice, then committed and lost its answer, still recognizes
// its own claim: the attempts spent on conflicts do not count against the
// budget for server faults, so one lost answer is always followed by the
// retry that finds it.
func TestLostAnswerAfterConflictsIsRecovered(t *testing.T) {
	f, proxy := newProxied(t)
	conflict := dynamotest.Fault{Error: "TransactionCanceledException", Reasons: []string{"TransactionConflict", "None"}}
	proxy.Inject("TransactWriteItems", conflict, conflict, dynamotest.Fault{AfterCommit: true})
	rec, tk := f.claim("k1")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if existing, taken, err := f.store.Create(ctx, rec, tk, nil); err != nil || taken {
		t.Fatalf("Create = %+v, %v; want the call's own claim reported as created", existing, err)
	}
	if n := f.env.Count(t, "ticket"); n != 1 {
		t.Errorf("%d tickets, want 1", n)
	}
}

// TestReadTicketIsOneConsistentRead: a ticket and its delivery, one
// strongly consistent GetItem; nil for a ticket that is not there.
func TestReadTicketIsOneConsistentRead(t *testing.T) {
	f, proxy := newProxied(t)
	rec, tk := f.claim("k1")
	if _, _, err := f.store.Create(context.Background(), rec, tk, nil); err != nil {
		t.Fatal(err)
	}
	f.env.Requests.Reset()
	got, d, err := f.store.ReadTicket(context.Background(), tk.ID)
	if err != nil || got == nil || got.ID != tk.ID || got.Tenant != alice.Tenant || d != nil {
		t.Fatalf("ReadTicket = %+v %+v %v", got, d, err)
	}
	if ops := f.env.Requests.Operations(); !maps.Equal(ops, map[string]int64{"GetItem": 1}) {
		t.Errorf("ReadTicket took %v, want one GetItem", ops)
	}
	if n := proxy.ConsistentReads("GetItem"); n != 1 {
		t.Errorf("%d of 1 GetItem asked for a consistent read", n)
	}
	if got, _, err := f.store.ReadTicket(context.Background(), ticket.NewID()); err != nil || got != nil {
		t.Errorf("missing ticket: %+v %v", got, err)
	}
}

func TestUsers(t *testing.T) {
	f := newFixture(t, nil)
	if err := f.store.PutUser(context.Background(), identity.User{ExternalID: "x", Tenant: "t", Active: true}); !errors.Is(err, dynamo.ErrNoFunctions) {
		t.Fatalf("PutUser without functions = %v", err)
	}
	if _, err := f.store.LoadUser(context.Background(), "nobody"); !errors.Is(err, identity.ErrUnknown) {
		t.Fatalf("LoadUser(nobody) = %v", err)
	}
	u, err := f.store.LoadUser(context.Background(), "user-a")
	if err != nil || u.Tenant != "tenant-a" || !u.Active || !u.Allows(ticket.CreateName) {
		t.Fatalf("LoadUser = %+v, %v", u, err)
	}
	added, err := f.store.AddUser(context.Background(), identity.User{ExternalID: "user-a", Tenant: "other", Functions: []string{ticket.GetName}})
	if err != nil || added {
		t.Fatalf("AddUser over an existing user = %v, %v", added, err)
	}
	if u, _ := f.store.LoadUser(context.Background(), "user-a"); u.Tenant != "tenant-a" {
		t.Fatal("AddUser replaced an existing user")
	}
}

// TestStoreErrorsAreSafeToLog checks that a store failure's text names the
// operation and code but not the message DynamoDB sent, which can quote
// request values.
func TestStoreErrorsAreSafeToLog(t *testing.T) {
	f, proxy := newProxied(t)
	proxy.Inject("TransactWriteItems", dynamotest.Fault{Error: "ValidationException"})
	rec, tk := f.claim("k1")
	_, _, err := f.store.Create(context.Background(), rec, tk, nil)
	var se *dynamo.Error
	if !errors.As(err, &se) || se.Code != "ValidationException" || se.Op != "TransactWriteItems" {
		t.Fatalf("Create = %v (%T)", err, err)
	}
	if strings.Contains(err.Error(), "injected") {
		t.Fatalf("error text %q carries the store's message", err)
	}
}

// TestUnavailableStoreIsAnErrorNotBusy: server faults and failed connections
// are retried within the budget, then reported as failures (500), not as
// busy.
func TestUnavailableStoreIsAnErrorNotBusy(t *testing.T) {
	f, proxy := newProxied(t)
	faults := make([]dynamotest.Fault, dynamo.MaxAttempts)
	for i := range faults {
		faults[i] = dynamotest.Fault{Error: "InternalServerError", Status: 500}
	}
	proxy.Inject("TransactWriteItems", faults...)
	rec, tk := f.claim("k1")
	_, _, err := f.store.Create(context.Background(), rec, tk, nil)
	if err == nil || errors.Is(err, idempotency.ErrBusy) {
		t.Fatalf("Create = %v, want a failure that is not busy", err)
	}
	if got := proxy.Seen("TransactWriteItems"); got != dynamo.MaxAttempts {
		t.Errorf("%d attempts, want %d", got, dynamo.MaxAttempts)
	}

	// Nothing listens: connection refused on every attempt.
	down := dynamo.New(dynamotest.NewClient(t, "http://127.0.0.1:1", nil), f.env.Table, dynamo.WithSleep(noSleep))
	if _, _, err := down.Create(context.Background(), rec, tk, nil); err == nil || errors.Is(err, idempotency.ErrBusy) {
		t.Fatalf("unreachable store: %v", err)
	}
}
