package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// outbox is a table with the demo users, where tickets are created with a
// delivery as the callback creates them and moved between states by the
// worker's own store calls (Lease, then Finish).
type outbox struct {
	t     *testing.T
	env   *dynamotest.Env
	store *dynamo.Store
	admin *dynamo.Admin
}

func newOutbox(t *testing.T, opts ...dynamo.AdminOption) *outbox {
	t.Helper()
	env := dynamotest.New(t)
	o := &outbox{t: t, env: env, store: dynamo.New(env.Client, env.Table), admin: dynamo.NewAdmin(env.Client, env.Table, opts...)}
	if _, err := localdb.SeedDemo(context.Background(), o.store); err != nil {
		t.Fatal(err)
	}
	return o
}

// ticket creates a ticket of u queued for delivery, created at at.
func (o *outbox) ticket(u identity.User, requestID string, at time.Time) ticket.Ticket {
	o.t.Helper()
	id := ticket.NewID()
	key := strings.Repeat("0", 32) + id[:8] + strings.Repeat("f", 24)
	rec := idempotency.Record{
		Key: key, UserID: u.ExternalID, Tenant: u.Tenant, Function: ticket.CreateName,
		State: idempotency.Completed, Fingerprint: "fp", TicketID: id,
		Result: []byte(`{"status":"created","ticket_id":"` + id + `"}`), CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour),
	}
	tk := ticket.Ticket{ID: id, Tenant: u.Tenant, UserID: u.ExternalID, Title: "Printer on fire", Priority: "high",
		CreatedAt: at, OperationKey: key, RequestID: requestID}
	out := &delivery.Record{State: delivery.Queued, Destination: "webhook", Key: delivery.Key(key, id), Since: at, Version: 1}
	if existing, taken, err := o.store.Create(context.Background(), rec, tk, out); err != nil || taken {
		o.t.Fatalf("Create = %v, %v", existing, err)
	}
	return tk
}

// move takes ticket id from queued to state s at at, as one attempt of
// the worker would: a lease, then its result.
func (o *outbox) move(id string, s delivery.State, at time.Time) delivery.Record {
	o.t.Helper()
	ctx := context.Background()
	_, r, err := o.store.Lease(ctx, id, delivery.Lease{Owner: "w-" + id[:4], From: at, Until: at.Add(30 * time.Second)})
	if err != nil {
		o.t.Fatalf("Lease: %v", err)
	}
	r.Attempts++
	r.State, r.Since, r.LastCode, r.LastStatus = s, at, "http_500", 500
	switch s {
	case delivery.Uncertain:
		r.MaybeSent, r.LastSent = true, at
	case delivery.Failed:
		r.LastCode, r.LastStatus, r.Reason = "http_422", 422, "title is too hot"
	case delivery.Queued:
		r.NextAt = at.Add(time.Minute)
	}
	if err := o.store.Finish(ctx, id, "w-"+id[:4], r); err != nil {
		o.t.Fatalf("Finish: %v", err)
	}
	return o.delivery(id)
}

func (o *outbox) delivery(id string) delivery.Record {
	o.t.Helper()
	r, err := o.store.Delivery(context.Background(), id)
	if err != nil || r == nil {
		o.t.Fatalf("Delivery(%s) = %v, %v", id, r, err)
	}
	return *r
}

func (o *outbox) item(id string) map[string]types.AttributeValue {
	o.t.Helper()
	return rawItem(o.t, o.env, "ticket#"+id)
}

var (
	carol = localdb.DemoUsers[2] // tenant-b; alice (store_test.go) is user-a of tenant-a
	t1    = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
)

func TestSettleDelivered(t *testing.T) {
	o := newOutbox(t)
	tk := o.ticket(alice, "r-1", t1)
	before := o.move(tk.ID, delivery.Uncertain, t1.Add(time.Minute))
	at := t1.Add(time.Hour)
	r, err := o.admin.Settle(context.Background(), dynamo.Settlement{
		TicketID: tk.ID, As: dynamo.SettleDelivered, Expect: delivery.Uncertain, Version: before.Version,
		Receipt: delivery.Receipt{ID: "4711", URL: "https://helpdesk.test/agent/tickets/4711"}, Actor: delivery.Actor{Who: "arn:aws:sts::123456789012:assumed-role/oncecall-settle/alice", Via: "aws_caller_identity", Verified: true, SourceIdentity: "alice", Operator: "on call"}, At: at,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != delivery.Delivered || r.Receipt.ID != "4711" || !r.DeliveredAt.Equal(at) || r.Version != before.Version+1 ||
		r.LeaseOwner != "" || r.Reason != "" || !r.Since.Equal(at) || r.Attempts != before.Attempts {
		t.Errorf("settled: %+v", r)
	}
	if len(r.Audit) != 1 {
		t.Fatalf("audit %+v", r.Audit)
	}
	// Who, how it was established, the session's source identity and the
	// operator's label, each kept apart.
	want := delivery.Decision{Actor: delivery.Actor{Who: "arn:aws:sts::123456789012:assumed-role/oncecall-settle/alice", Via: "aws_caller_identity", Verified: true, SourceIdentity: "alice", Operator: "on call"}, At: at, Action: "settle.delivered", From: delivery.Uncertain, To: delivery.Delivered,
		Receipt: delivery.Receipt{ID: "4711", URL: "https://helpdesk.test/agent/tickets/4711"}}
	if !reflect.DeepEqual(r.Audit[0], want) {
		t.Errorf("audit entry %+v, want %+v", r.Audit[0], want)
	}
	item := o.item(tk.ID)
	for _, gone := range []string{"attn_shard", "attn_due", "attn", "attn_at"} {
		if _, ok := item[gone]; ok {
			t.Errorf("a delivered ticket keeps %s: it stays in the attention index", gone)
		}
	}
	if c, err := o.store.Pending(context.Background(), delivery.Uncertain); err != nil || c.N != 0 {
		t.Errorf("uncertain backlog after settling: %+v, %v", c, err)
	}
	if stored := o.delivery(tk.ID); stored.State != delivery.Delivered || len(stored.Audit) != 1 {
		t.Errorf("stored: %+v", stored)
	}
}

func TestSettleNotCreatedQueuesAgainWithTheSameKey(t *testing.T) {
	o := newOutbox(t)
	tk := o.ticket(alice, "r-2", t1)
	before := o.move(tk.ID, delivery.Uncertain, t1.Add(time.Minute))
	at := t1.Add(2 * time.Hour)
	r, err := o.admin.Settle(context.Background(), dynamo.Settlement{
		TicketID: tk.ID, As: dynamo.SettleNotCreated, Expect: delivery.Uncertain, Version: before.Version,
		Reason: "not in the helpdesk by external id", Actor: delivery.Actor{Who: "alice"}, At: at,
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != delivery.Queued || r.MaybeSent || r.Attempts != 0 || !r.NextAt.Equal(at) || !r.Since.Equal(at) ||
		r.Key != before.Key || r.Reason != "not in the helpdesk by external id" || r.Version != before.Version+1 {
		t.Errorf("settled: %+v", r)
	}
	if a := r.Audit[len(r.Audit)-1]; a.Action != "settle.not_created" || a.Note != dynamo.NotCreatedNote || a.From != delivery.Uncertain || a.To != delivery.Queued {
		t.Errorf("audit %+v", a)
	}
	item := o.item(tk.ID)
	if !strings.HasPrefix(str(item, "attn_shard"), "queued#") || str(item, "attn_due") != "2026-12-01T11:00:00.000000000Z#"+tk.ID {
		t.Errorf("attention index entry %s %s; want queued, due at the decision", str(item, "attn_shard"), str(item, "attn_due"))
	}
	// The sweep finds it due at once, and the worker may lease it.
	ids, _, err := o.store.Due(context.Background(), at, "", 10)
	if err != nil || !slices.Contains(ids, tk.ID) {
		t.Errorf("Due = %v, %v; want the ticket", ids, err)
	}
	if _, got, err := o.store.Lease(context.Background(), tk.ID, delivery.Lease{Owner: "w2", From: at, Until: at.Add(time.Minute)}); err != nil || got.Attempts != 0 {
		t.Errorf("Lease after not-created: %+v, %v", got, err)
	}
}

func TestSettleAbandoned(t *testing.T) {
	o := newOutbox(t)
	tk := o.ticket(carol, "r-3", t1)
	o.move(tk.ID, delivery.Failed, t1.Add(time.Minute))
	r, err := o.admin.Settle(context.Background(), dynamo.Settlement{
		TicketID: tk.ID, As: dynamo.SettleAbandoned, Expect: delivery.Failed, Reason: "customer withdrew it", Actor: delivery.Actor{Who: "bob"}, At: t1.Add(time.Hour),
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.State != delivery.Abandoned || r.Reason != "customer withdrew it" || len(r.Audit) != 1 || r.Audit[0].Reason != "customer withdrew it" {
		t.Errorf("settled: %+v", r)
	}
	if _, ok := o.item(tk.ID)["attn"]; ok {
		t.Error("an abandoned ticket stays in the attention index")
	}
	// Abandoned is settled again (found in the helpdesk after all); the
	// audit keeps both decisions, oldest first.
	r, err = o.admin.Settle(context.Background(), dynamo.Settlement{
		TicketID: tk.ID, As: dynamo.SettleDelivered, Expect: delivery.Abandoned, Version: r.Version,
		Receipt: delivery.Receipt{ID: "88"}, Actor: delivery.Actor{Who: "bob"}, At: t1.Add(2 * time.Hour),
	})
	if err != nil || r.State != delivery.Delivered || len(r.Audit) != 2 || r.Audit[1].From != delivery.Abandoned || r.Reason != "" {
		t.Errorf("abandoned, then delivered: %+v, %v", r, err)
	}
	// The worker never takes an abandoned or delivered ticket.
	var nl *delivery.NotLeasableError
	if _, _, err := o.store.Lease(context.Background(), tk.ID, delivery.Lease{Owner: "w", From: t1.Add(3 * time.Hour), Until: t1.Add(4 * time.Hour)}); !errors.As(err, &nl) {
		t.Errorf("Lease of a settled ticket: %v", err)
	}
}

// TestSettleRefusalsWriteNothing: each refusal names what the record is
// now and leaves the item exactly as it was.
func TestSettleRefusalsWriteNothing(t *testing.T) {
	o := newOutbox(t)
	ctx := context.Background()
	uncertain := o.ticket(alice, "r-4", t1)
	u := o.move(uncertain.ID, delivery.Uncertain, t1.Add(time.Minute))
	leased := o.ticket(alice, "r-5", t1)
	leaseUntil := t1.Add(time.Hour)
	if _, _, err := o.store.Lease(ctx, leased.ID, delivery.Lease{Owner: "w-live", From: t1, Until: leaseUntil}); err != nil {
		t.Fatal(err)
	}
	delivered := o.ticket(alice, "r-6", t1)
	if _, err := o.admin.Settle(ctx, dynamo.Settlement{TicketID: delivered.ID, As: dynamo.SettleDelivered, Expect: delivery.Queued,
		Receipt: delivery.Receipt{ID: "1"}, Actor: delivery.Actor{Who: "x"}, At: t1}); err != nil {
		t.Fatal(err)
	}
	plain := created(t, o.store, alice, "k-plain", "r-7", t1) // no destination

	for _, tc := range []struct {
		name  string
		s     dynamo.Settlement
		state delivery.State // the conflict's current state; "" for the other errors
		err   error
	}{
		{"other state", dynamo.Settlement{TicketID: uncertain.ID, As: dynamo.SettleAbandoned, Expect: delivery.Failed, Reason: "r"}, delivery.Uncertain, nil},
		{"other version", dynamo.Settlement{TicketID: uncertain.ID, As: dynamo.SettleNotCreated, Expect: delivery.Uncertain, Version: u.Version - 1}, delivery.Uncertain, nil},
		{"live lease", dynamo.Settlement{TicketID: leased.ID, As: dynamo.SettleAbandoned, Expect: delivery.Queued, Reason: "r"}, delivery.Queued, nil},
		{"delivered", dynamo.Settlement{TicketID: delivered.ID, As: dynamo.SettleNotCreated, Expect: delivery.Queued, Version: 2}, delivery.Delivered, nil},
		{"no ticket", dynamo.Settlement{TicketID: ticket.NewID(), As: dynamo.SettleAbandoned, Expect: delivery.Failed, Reason: "r"}, "", dynamo.ErrNoTicket},
		{"no delivery", dynamo.Settlement{TicketID: plain.ID, As: dynamo.SettleAbandoned, Expect: delivery.Failed, Reason: "r"}, "", dynamo.ErrNoDelivery},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := o.env.Items(t, "ticket")
			tc.s.Who, tc.s.At = "alice", t1.Add(10*time.Minute)
			_, err := o.admin.Settle(ctx, tc.s)
			var sc *dynamo.SettleConflictError
			switch {
			case tc.err != nil && !errors.Is(err, tc.err):
				t.Errorf("err = %v, want %v", err, tc.err)
			case tc.err == nil && (!errors.As(err, &sc) || sc.Current.State != tc.state || !errors.Is(err, dynamo.ErrConflict)):
				t.Errorf("err = %v, want a conflict showing %s", err, tc.state)
			}
			if tc.name == "live lease" && (sc == nil || !sc.Current.Leased(tc.s.At) || !sc.Current.LeaseUntil.Equal(leaseUntil)) {
				t.Errorf("the conflict does not show the live lease: %+v", sc)
			}
			after := o.env.Items(t, "ticket")
			if !sameTickets(before, after) {
				t.Error("a refused settlement changed a ticket")
			}
		})
	}
	// Malformed settlements are refused before any request.
	o.env.Requests.Reset()
	for _, s := range []dynamo.Settlement{
		{TicketID: uncertain.ID, As: "maybe", Expect: delivery.Uncertain, Actor: delivery.Actor{Who: "a"}},
		{TicketID: uncertain.ID, As: dynamo.SettleAbandoned, Expect: delivery.Delivered, Actor: delivery.Actor{Who: "a"}, Reason: "r"},
		{TicketID: uncertain.ID, As: dynamo.SettleAbandoned, Expect: delivery.Uncertain, Actor: delivery.Actor{Who: "a"}},
		{TicketID: uncertain.ID, As: dynamo.SettleDelivered, Expect: delivery.Uncertain, Actor: delivery.Actor{Who: "a"}},
		{TicketID: uncertain.ID, As: dynamo.SettleNotCreated, Expect: delivery.Uncertain, Actor: delivery.Actor{Who: "a"}, Receipt: delivery.Receipt{ID: "1"}},
		{TicketID: uncertain.ID, As: dynamo.SettleNotCreated, Expect: delivery.Uncertain},
		{TicketID: uncertain.ID, As: dynamo.SettleAbandoned, Expect: delivery.Abandoned, Actor: delivery.Actor{Who: "a"}, Reason: "r"},
		{TicketID: uncertain.ID, As: dynamo.SettleNotCreated, Expect: delivery.Uncertain, Actor: delivery.Actor{Who: "a"}, Reason: strings.Repeat("x", dynamo.MaxSettleReason+1)},
	} {
		if _, err := o.admin.Settle(ctx, s); err == nil || errors.Is(err, dynamo.ErrConflict) {
			t.Errorf("%+v: err = %v", s, err)
		}
	}
	if n := o.env.Requests.Load(); n != 0 {
		t.Errorf("malformed settlements made %d requests", n)
	}
}

func sameTickets(a, b []map[string]types.AttributeValue) bool {
	key := func(m map[string]types.AttributeValue) string {
		return m[dynamo.PartitionKey].(*types.AttributeValueMemberS).Value
	}
	am := map[string]map[string]types.AttributeValue{}
	for _, m := range a {
		am[key(m)] = m
	}
	if len(a) != len(b) {
		return false
	}
	for _, m := range b {
		o, ok := am[key(m)]
		if !ok || !maps.EqualFunc(o, m, func(x, y types.AttributeValue) bool { return attrEqual(x, y) }) {
			return false
		}
	}
	return true
}

func attrEqual(x, y types.AttributeValue) bool {
	switch xv := x.(type) {
	case *types.AttributeValueMemberS:
		yv, ok := y.(*types.AttributeValueMemberS)
		return ok && xv.Value == yv.Value
	case *types.AttributeValueMemberN:
		yv, ok := y.(*types.AttributeValueMemberN)
		return ok && xv.Value == yv.Value
	case *types.AttributeValueMemberBOOL:
		yv, ok := y.(*types.AttributeValueMemberBOOL)
		return ok && xv.Value == yv.Value
	case *types.AttributeValueMemberSS:
		yv, ok := y.(*types.AttributeValueMemberSS)
		return ok && slices.Equal(slices.Sorted(slices.Values(xv.Value)), slices.Sorted(slices.Values(yv.Value)))
	case *types.AttributeValueMemberL:
		yv, ok := y.(*types.AttributeValueMemberL)
		return ok && slices.EqualFunc(xv.Value, yv.Value, attrEqual)
	case *types.AttributeValueMemberM:
		yv, ok := y.(*types.AttributeValueMemberM)
		return ok && maps.EqualFunc(xv.Value, yv.Value, attrEqual)
	}
	return false
}

// TestSettleAnswerLostAfterCommit: the store applies the decision and the
// answer is lost; the retry meets the decision in the audit and reports it
// made, once.
func TestSettleAnswerLostAfterCommit(t *testing.T) {
	o := newOutbox(t)
	tk := o.ticket(alice, "r-8", t1)
	u := o.move(tk.ID, delivery.Uncertain, t1.Add(time.Minute))
	proxy := dynamotest.NewProxy(t, o.env.Endpoint)
	proxy.Inject("UpdateItem", dynamotest.Fault{AfterCommit: true})
	admin := dynamo.NewAdmin(dynamotest.NewClient(t, proxy.URL, nil), o.env.Table)
	r, err := admin.Settle(context.Background(), dynamo.Settlement{
		TicketID: tk.ID, As: dynamo.SettleNotCreated, Expect: delivery.Uncertain, Version: u.Version, Actor: delivery.Actor{Who: "alice"}, At: t1.Add(time.Hour),
	})
	if err != nil || r.State != delivery.Queued || len(r.Audit) != 1 || r.Version != u.Version+1 {
		t.Fatalf("after a lost answer: %+v, %v", r, err)
	}
	if proxy.Seen("UpdateItem") != 2 {
		t.Errorf("%d UpdateItem requests, want 2", proxy.Seen("UpdateItem"))
	}
}

func TestDeliveriesOldestFirstPerTenantAndPaged(t *testing.T) {
	o := newOutbox(t, dynamo.WithPageSize(2))
	ctx := context.Background()
	var want []string // tenant-a's uncertain tickets, oldest first
	var all []string
	for i, u := range []identity.User{alice, carol, alice, alice, carol, alice, alice} {
		tk := o.ticket(u, "r-list", t1)
		// Entered in the order i, one minute apart, created in another order.
		o.move(tk.ID, delivery.Uncertain, t1.Add(time.Duration(10-i)*time.Minute))
		all = append([]string{tk.ID}, all...)
		if u.Tenant == alice.Tenant {
			want = append([]string{tk.ID}, want...)
		}
	}
	failed := o.ticket(alice, "r-list", t1)
	o.move(failed.ID, delivery.Failed, t1)
	queued := o.ticket(alice, "r-list", t1)
	o.move(queued.ID, delivery.Queued, t1)
	// Written without a next attempt time (as before the sweep's backstop
	// listed new tickets), it is in no listing; a ticket queued by the
	// callback is listed for its first attempt (oncecall-admin's tests).
	o.ticket(alice, "r-list", t1)

	list := func(q dynamo.DeliveryQuery) []string {
		t.Helper()
		var got []string
		for pages := 0; ; pages++ {
			page, err := o.admin.Deliveries(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range page.Deliveries {
				got = append(got, d.TicketID)
				if d.Delivery.State != q.State || (q.Tenant != "" && d.Ticket.Tenant != q.Tenant) {
					t.Errorf("listed %+v for %+v", d, q)
				}
			}
			if page.Next == "" {
				return got
			}
			if pages > 20 {
				t.Fatal("no last page")
			}
			q.After = page.Next
		}
	}
	if got := list(dynamo.DeliveryQuery{State: delivery.Uncertain, Limit: 3}); !slices.Equal(got, all) {
		t.Errorf("uncertain, pages of 3: %v, want %v", got, all)
	}
	if got := list(dynamo.DeliveryQuery{State: delivery.Uncertain, Tenant: alice.Tenant, Limit: 2}); !slices.Equal(got, want) {
		t.Errorf("tenant-a, pages of 2: %v, want %v", got, want)
	}
	// Entered 4 to 10 minutes after t1; older than at t1+6m: those of t1+4..6m.
	if got := list(dynamo.DeliveryQuery{State: delivery.Uncertain, EnteredBefore: t1.Add(6 * time.Minute), Limit: 100}); !slices.Equal(got, all[:3]) {
		t.Errorf("entered by t1+6m: %v, want %v", got, all[:3])
	}
	if got := list(dynamo.DeliveryQuery{State: delivery.Failed, Limit: 10}); !slices.Equal(got, []string{failed.ID}) {
		t.Errorf("failed: %v", got)
	}
	if got := list(dynamo.DeliveryQuery{State: delivery.Queued, Limit: 10}); !slices.Equal(got, []string{queued.ID}) {
		t.Errorf("queued: %v, want only the retry", got)
	}
	// A settled ticket leaves the listing.
	if _, err := o.admin.Settle(ctx, dynamo.Settlement{TicketID: all[0], As: dynamo.SettleAbandoned, Expect: delivery.Uncertain, Reason: "dup", Actor: delivery.Actor{Who: "a"}, At: t1.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got := list(dynamo.DeliveryQuery{State: delivery.Uncertain, Limit: 100}); !slices.Equal(got, all[1:]) {
		t.Errorf("after settling the oldest: %v", got)
	}
	// Cursors are checked.
	page, err := o.admin.Deliveries(ctx, dynamo.DeliveryQuery{State: delivery.Uncertain, Limit: 1})
	if err != nil || page.Next == "" {
		t.Fatalf("first page: %+v %v", page, err)
	}
	for _, bad := range []dynamo.DeliveryQuery{
		{State: delivery.Failed, Limit: 1, After: page.Next}, // another state's cursor
		{State: delivery.Uncertain, Limit: 1, After: "not-a-cursor"},
	} {
		if _, err := o.admin.Deliveries(ctx, bad); !errors.Is(err, dynamo.ErrBadCursor) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	for _, bad := range []dynamo.DeliveryQuery{{State: delivery.Delivered, Limit: 1}, {State: delivery.Uncertain, Limit: 0}} {
		if _, err := o.admin.Deliveries(ctx, bad); err == nil {
			t.Errorf("%+v listed", bad)
		}
	}
	if o.env.Requests.Operations()["Scan"] != 0 {
		t.Error("a listing scanned the table")
	}
}

// TestSettlementKeepsItsOperation: a decision stays the answer to the same
// call for Keep after it: the operation's expiry is extended to the
// decision's time plus Keep when it would end sooner, never shortened.
func TestSettlementKeepsItsOperation(t *testing.T) {
	o := newOutbox(t)
	tk := o.ticket(alice, "r-1", t1) // its operation expires at t1 + 24h
	before := o.move(tk.ID, delivery.Uncertain, t1.Add(time.Minute))
	at := t1.Add(20 * time.Hour)
	if _, err := o.admin.Settle(context.Background(), dynamo.Settlement{
		TicketID: tk.ID, As: dynamo.SettleDelivered, Expect: delivery.Uncertain, Version: before.Version,
		Receipt: delivery.Receipt{ID: "4711"}, Actor: delivery.Actor{Who: "alice"}, At: at, Keep: 24 * time.Hour,
	}); err != nil {
		t.Fatal(err)
	}
	rec, err := o.store.Operation(context.Background(), tk.OperationKey)
	if err != nil || rec == nil {
		t.Fatalf("operation %v, %v", rec, err)
	}
	if want := at.Add(24 * time.Hour); !rec.ExpiresAt.Equal(want) {
		t.Fatalf("operation expires at %v, want %v: the decision's time plus Keep", rec.ExpiresAt, want)
	}

	other := o.ticket(alice, "r-2", t1)
	b2 := o.move(other.ID, delivery.Failed, t1.Add(time.Minute))
	if _, err := o.admin.Settle(context.Background(), dynamo.Settlement{
		TicketID: other.ID, As: dynamo.SettleAbandoned, Expect: delivery.Failed, Version: b2.Version,
		Reason: "r", Actor: delivery.Actor{Who: "alice"}, At: t1.Add(time.Hour), Keep: time.Hour,
	}); err != nil {
		t.Fatal(err)
	}
	if rec, _ := o.store.Operation(context.Background(), other.OperationKey); rec == nil || !rec.ExpiresAt.Equal(t1.Add(24*time.Hour)) {
		t.Fatalf("a shorter Keep changed the expiry: %+v", rec)
	}
}

// TestSettleNotCreatedFinishesOrRunsAgain: whichever of the settlement's
// writes fails for good (each answered 500, or applied with its answer
// lost, past the store's retries), the operator's advice holds: the same
// settle, run again later (another time, as a person's rerun has), makes
// the decision once, with its operation kept, and never a settle conflict.
func TestSettleNotCreatedFinishesOrRunsAgain(t *testing.T) {
	keep := 30 * 24 * time.Hour
	for _, kind := range []struct {
		name  string
		fault dynamotest.Fault
	}{
		{"refused", dynamotest.Fault{Error: "InternalServerError", Status: 500}},
		{"answer lost", dynamotest.Fault{AfterCommit: true}},
	} {
		for skip := range 3 {
			t.Run(fmt.Sprintf("%s, update %d on", kind.name, skip+1), func(t *testing.T) {
				o := newOutbox(t)
				tk := o.ticket(alice, "r-again", t1)
				u := o.move(tk.ID, delivery.Uncertain, t1.Add(time.Minute))
				proxy := dynamotest.NewProxy(t, o.env.Endpoint)
				faults := make([]dynamotest.Fault, skip, skip+dynamo.MaxAttempts)
				for range dynamo.MaxAttempts {
					faults = append(faults, kind.fault)
				}
				proxy.Inject("UpdateItem", faults...)
				admin := dynamo.NewAdmin(dynamotest.NewClient(t, proxy.URL, nil), o.env.Table)
				s := dynamo.Settlement{TicketID: tk.ID, As: dynamo.SettleNotCreated, Expect: delivery.Uncertain, Version: u.Version,
					Actor: delivery.Actor{Who: "alice"}, At: t1.Add(time.Hour), Keep: keep}
				_, first := admin.Settle(context.Background(), s)
				proxy.Clear("UpdateItem")
				s.At = s.At.Add(time.Minute)
				r, err := admin.Settle(context.Background(), s)
				if err != nil {
					t.Fatalf("the same settle run again (the first: %v): %v", first, err)
				}
				if r.State != delivery.Queued || len(r.Audit) != 1 || r.Version != u.Version+1 {
					t.Fatalf("after running it again: %+v", r)
				}
				op, err := o.store.Operation(context.Background(), tk.OperationKey)
				if err != nil || op == nil || op.ExpiresAt.Before(t1.Add(time.Hour+keep)) {
					t.Fatalf("operation %+v, %v: not kept for the decision", op, err)
				}
			})
		}
	}
}
