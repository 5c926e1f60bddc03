package dynamo_test

import (
	"context"
	"maps"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// TestRequestRecordIsOneConsistentRead: the first ticket of a request id
// has the id FirstTicketID names, so RequestRecord reads the operation's
// record and its delivery with one strongly consistent GetItem of that
// ticket (and, once per Store, the id key); nil for an id that created
// nothing, or that another user's call created.
func TestRequestRecordIsOneConsistentRead(t *testing.T) {
	f, proxy := newProxied(t)
	ctx := context.Background()
	id, err := f.store.FirstTicketID(ctx, alice.ExternalID, "r-1")
	if err != nil || !ticket.ValidID(id) {
		t.Fatalf("FirstTicketID = %q, %v", id, err)
	}
	rec, tk := f.claim("k1")
	tk.ID, rec.TicketID, rec.Result = id, id, ticket.Created(id)
	out := delivery.NewQueued("rt", delivery.Key("k1", id), f.now)
	if _, _, err := f.store.Create(ctx, rec, tk, &out); err != nil {
		t.Fatal(err)
	}
	if ops := f.env.Requests.Operations(); !maps.Equal(ops, map[string]int64{"GetItem": 2, "PutItem": 1, "TransactWriteItems": 1}) {
		t.Errorf("the id key's creation and Create took %v, want the key's read, put and read again, and one transaction", ops)
	}
	// Another Store over the same table (another container) reads the
	// same key, once.
	other := f.reopen(t)
	for i := range 2 {
		f.env.Requests.Reset()
		before := proxy.ConsistentReads("GetItem")
		got, err := other.RequestRecord(ctx, alice.ExternalID, "r-1")
		if err != nil || got == nil {
			t.Fatalf("RequestRecord = %+v, %v", got, err)
		}
		if got.UserID != alice.ExternalID || got.RequestID != "r-1" || got.Tenant != alice.Tenant || got.Function != ticket.CreateName ||
			got.OperationKey != "k1" || got.TicketID != id || string(got.Result) != string(rec.Result) ||
			!got.CreatedAt.Equal(t0.Truncate(time.Second)) || got.Delivery == nil || got.Delivery.State != delivery.Queued {
			t.Errorf("request record %+v", got)
		}
		want := map[string]int64{"GetItem": 1}
		if i == 0 {
			want["GetItem"] = 2 // the id key, once per Store
		}
		if ops := f.env.Requests.Operations(); !maps.Equal(ops, want) {
			t.Errorf("RequestRecord (%d) took %v, want %v", i, ops, want)
		}
		if n := proxy.ConsistentReads("GetItem") - before; n != int(want["GetItem"]) {
			t.Errorf("%d of %d GetItems asked for a consistent read", n, want["GetItem"])
		}
	}
	for _, c := range [][2]string{{alice.ExternalID, "r-2"}, {"user-b", "r-1"}} {
		if got, err := other.RequestRecord(ctx, c[0], c[1]); err != nil || got != nil {
			t.Errorf("RequestRecord(%q, %q) = %+v, %v; want nothing", c[0], c[1], got, err)
		}
	}
}

// TestRequestRecordOnATableWithoutAnIDKey: before any call created the id
// key no ticket has an id it names: the read answers nothing and writes
// nothing.
func TestRequestRecordOnATableWithoutAnIDKey(t *testing.T) {
	f := newFixture(t, nil)
	got, err := f.store.RequestRecord(context.Background(), alice.ExternalID, "r-1")
	if err != nil || got != nil {
		t.Fatalf("RequestRecord = %+v, %v; want nothing", got, err)
	}
	if ops := f.env.Requests.Operations(); !maps.Equal(ops, map[string]int64{"GetItem": 1}) {
		t.Errorf("the read took %v, want the id key's GetItem alone", ops)
	}
}

// TestIDKeyIsCreatedOnce: concurrent first calls on a new table, and a
// put whose answer is lost, all end with the one key the table keeps.
func TestIDKeyIsCreatedOnce(t *testing.T) {
	f, proxy := newProxied(t)
	proxy.Inject("PutItem", dynamotest.Fault{AfterCommit: true})
	ctx := context.Background()
	want, err := f.store.FirstTicketID(ctx, alice.ExternalID, "r-1")
	if err != nil {
		t.Fatalf("FirstTicketID after a lost answer: %v", err)
	}
	ids := make(chan string, 8)
	for range 8 {
		go func() {
			id, err := f.reopen(t).FirstTicketID(ctx, alice.ExternalID, "r-1")
			if err != nil {
				id = err.Error()
			}
			ids <- id
		}()
	}
	for range 8 {
		if got := <-ids; got != want {
			t.Errorf("another Store named %s, want %s", got, want)
		}
	}
	if n := f.env.Count(t, "config"); n != 1 {
		t.Errorf("%d id key items, want 1", n)
	}
}
