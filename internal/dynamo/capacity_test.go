package dynamo_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// TestEveryStoreCallAsksForCapacity makes every kind of request the Store
// and Admin send and checks, from the bodies sent, that each asked for
// INDEXES and that each answer carried what it consumed. (dynamotest
// checks the bodies of every other store test's requests the same way.)
func TestEveryStoreCallAsksForCapacity(t *testing.T) {
	o := newOutbox(t)
	ctx := context.Background()
	at := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	o.env.Requests.Reset()

	tk := o.ticket(alice, "r-cap", at)                           // TransactWriteItems
	o.move(tk.ID, delivery.Uncertain, at)                        // UpdateItem (Lease, Finish), GetItem
	if _, _, err := o.store.ReadTicket(ctx, tk.ID); err != nil { // GetItem
		t.Fatal(err)
	}
	if _, err := o.store.LoadUser(ctx, alice.ExternalID); err != nil {
		t.Fatal(err)
	}
	if err := o.store.PutUser(ctx, identity.User{ExternalID: "u-cap", Tenant: "tenant-x", Active: true, Functions: []string{ticket.GetName}}); err != nil { // PutItem
		t.Fatal(err)
	}
	if _, err := o.store.Pending(ctx, delivery.Uncertain); err != nil { // Query
		t.Fatal(err)
	}
	if _, err := o.admin.Users(ctx, alice.Tenant, "", 10); err != nil { // Query, BatchGetItem
		t.Fatal(err)
	}
	if _, err := o.admin.FindRequest(ctx, alice.Tenant, "r-cap", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := o.admin.Stranded(ctx, at, time.Now()); err != nil { // Scan
		t.Fatal(err)
	}
	if err := o.admin.DeleteUser(ctx, dynamo.UserRecord{User: identity.User{ExternalID: "u-cap"}}); err != nil { // DeleteItem
		t.Fatal(err)
	}
	if _, err := o.admin.RemoveGrantCopies(ctx); err != nil { // Scan
		t.Fatal(err)
	}

	ops := o.env.Requests.Operations()
	for _, op := range []string{"TransactWriteItems", "GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "BatchGetItem", "Scan"} {
		if ops[op] == 0 {
			t.Errorf("no %s request was made; requests: %v", op, ops)
		}
	}
	if un := o.env.Requests.Unasked(); len(un) != 0 {
		t.Errorf("requests that did not ask for INDEXES: %v", un)
	}
	for op, c := range o.env.Requests.Capacity() {
		if c.Reported != c.Requests {
			t.Errorf("%s: %d of %d answers carried their consumed capacity", op, c.Reported, c.Requests)
		}
	}
}

// TestCounterSeesARequestThatDoesNotAsk shows that the check can fail: a
// client built without dynamo.Options sends GetItem without asking, and
// the Counter says so; the same read through Options does not.
func TestCounterSeesARequestThatDoesNotAsk(t *testing.T) {
	env := dynamotest.New(t)
	bare := &dynamo.Counter{}
	hc := dynamo.HTTPClient()
	t.Cleanup(hc.CloseIdleConnections)
	o := env.Client.Options()
	client := dynamodb.New(dynamodb.Options{Region: o.Region, Credentials: o.Credentials, HTTPClient: hc,
		BaseEndpoint: aws.String(env.Endpoint), RetryMaxAttempts: 1}, bare.Count())
	in := &dynamodb.GetItemInput{TableName: aws.String(env.Table), Key: map[string]types.AttributeValue{dynamo.PartitionKey: &types.AttributeValueMemberS{Value: "user#nobody"}}}
	if _, err := client.GetItem(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if got := bare.Unasked(); !maps.Equal(got, map[string]int64{"GetItem": 1}) {
		t.Errorf("a bare client's GetItem: Unasked = %v, want GetItem 1", got)
	}
	if _, err := env.Client.GetItem(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if got := env.Requests.Unasked(); len(got) != 0 {
		t.Errorf("a GetItem through dynamo.Options: Unasked = %v, want none", got)
	}
	if in.ReturnConsumedCapacity != "" {
		t.Errorf("the caller's input was changed: ReturnConsumedCapacity %q", in.ReturnConsumedCapacity)
	}
	if c := env.Requests.Capacity()["GetItem"]; c.Reported != 1 || c.Total().Read <= 0 {
		t.Errorf("GetItem capacity %+v, want one answer with read units", c)
	}
}

// TestCapacityIsSummedFromAnswers checks what the benchmark reports: the
// units come from the answers, so they follow the items the store wrote.
func TestCapacityIsSummedFromAnswers(t *testing.T) {
	f := newFixture(t, nil)
	ctx := context.Background()
	create := func(key string, out *delivery.Record, description string) dynamo.Capacity {
		t.Helper()
		rec, tk := f.claim(key)
		tk.Description = description
		if out != nil {
			out.Key = delivery.Key(key, tk.ID)
		}
		f.env.Requests.Reset()
		if existing, _, err := f.store.Create(ctx, rec, tk, out); err != nil {
			t.Fatalf("Create(%s): %v %v", key, existing, err)
		}
		return f.env.Requests.Capacity()["TransactWriteItems"]
	}
	queued := func() *delivery.Record {
		return &delivery.Record{State: delivery.Queued, Destination: "webhook", Since: f.now, Version: 1}
	}

	plain := create("k-plain", nil, "")
	if plain.Requests != 1 || plain.Reported != 1 || plain.Total().Read != 0 {
		t.Fatalf("created call: %+v, want one answer with write units only", plain)
	}
	// Two items written in a transaction (the operation and the ticket),
	// two units each at least, and the ticket's entry in the lookup index.
	if plain.Table.Write < 4 || plain.Indexes[dynamo.LookupIndex].Write <= 0 || plain.Index().Write != plain.Indexes[dynamo.LookupIndex].Write {
		t.Errorf("created call: %+v, want ≥ 4 table write units and the lookup index's", plain)
	}

	// A description that leaves the ticket just under 1 KB without its
	// delivery and over it with it.
	var small dynamo.Capacity
	desc := ""
	for n := 0; n < 1024; n += 8 {
		d := strings.Repeat("x", n)
		if c := create(fmt.Sprintf("k-size-%d", n), nil, d); c.Table.Write > plain.Table.Write {
			break
		} else {
			small, desc = c, d
		}
	}
	withDest := create("k-dest", queued(), desc)
	if withDest.Total().Write <= small.Total().Write {
		t.Errorf("created call with a destination (%+v) reports no more write units than without (%+v) for a ticket near 1 KB", withDest, small)
	}

	// A replay: the transaction is cancelled by the claim and its answer
	// carries no capacity.
	rec, tk := f.claim("k-plain")
	f.env.Requests.Reset()
	existing, taken, err := f.store.Create(ctx, rec, tk, nil)
	if err != nil || !taken || existing.State != idempotency.Completed {
		t.Fatalf("replay: %v %v", existing, err)
	}
	replay := f.env.Requests.Capacity()
	if ops := f.env.Requests.Operations(); !maps.Equal(ops, map[string]int64{"TransactWriteItems": 1}) {
		t.Fatalf("replay requests %v", ops)
	}
	if c := replay["TransactWriteItems"]; c.Requests != 1 || c.Reported != 0 || c.Total() != (dynamo.Units{}) {
		t.Errorf("replay capacity %+v, want one answer reporting no units", c)
	}
	t.Logf("created %+v; near 1 KB %+v; with a destination %+v", plain, small, withDest)
}

// TestConsumedReadsEveryShape checks how one answer's entries are summed:
// the table's and each index's units as given, CapacityUnits alone as read
// or write units by operation, and a table part inferred from the total
// when the entry has none.
func TestConsumedReadsEveryShape(t *testing.T) {
	f := aws.Float64
	query := dynamo.Consumed("Query", []types.ConsumedCapacity{{
		TableName: aws.String("t"), CapacityUnits: f(0.5), Table: &types.Capacity{CapacityUnits: f(0)},
		GlobalSecondaryIndexes: map[string]types.Capacity{"L": {CapacityUnits: f(0.5)}},
	}})
	if query.Table != (dynamo.Units{}) || query.Indexes["L"] != (dynamo.Units{Read: 0.5}) || query.Reported != 1 {
		t.Errorf("Query: %+v", query)
	}
	tx := dynamo.Consumed("TransactWriteItems", []types.ConsumedCapacity{
		{CapacityUnits: f(7), WriteCapacityUnits: f(7), Table: &types.Capacity{CapacityUnits: f(6), WriteCapacityUnits: f(6)},
			GlobalSecondaryIndexes: map[string]types.Capacity{"L": {CapacityUnits: f(1), WriteCapacityUnits: f(1)}}},
		{CapacityUnits: f(2)},
	})
	if tx.Table != (dynamo.Units{Write: 8}) || tx.Total() != (dynamo.Units{Write: 9}) || !slices.Equal(tx.IndexNames(), []string{"L"}) {
		t.Errorf("TransactWriteItems over two tables: %+v", tx)
	}
	put := dynamo.Consumed("PutItem", []types.ConsumedCapacity{{CapacityUnits: f(3), GlobalSecondaryIndexes: map[string]types.Capacity{"L": {CapacityUnits: f(1)}}}})
	if put.Table != (dynamo.Units{Write: 2}) || put.Index() != (dynamo.Units{Write: 1}) {
		t.Errorf("PutItem without a table part: %+v", put)
	}
	refused := dynamo.Consumed("UpdateItem", nil)
	if refused.Requests != 1 || refused.Reported != 0 || refused.Total() != (dynamo.Units{}) {
		t.Errorf("an error answer: %+v", refused)
	}
	sum := tx.Add(put).Add(refused)
	if back := sum.Sub(put).Sub(refused); back.Total() != tx.Total() || back.Requests != 1 || len(back.Indexes) != 1 {
		t.Errorf("Add then Sub: %+v, want %+v", back, tx)
	}
}
