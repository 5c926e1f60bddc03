package dynamo_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/ticket"
)

// TestCreateAttributesCoverTheCreate: every attribute a create names for
// its operation and its ticket (the operation's Put, the ticket's Update:
// items, keys and expressions, a ticket with every field, a result and a
// new delivery) is one of dynamo.CreateAttributes, which the callback's
// role is limited to; the ticket is never Put (a PutItem replaces an item
// whole, audit and all); and those never include the audit, the
// delivery's state or what only a decision or an attempt records.
func TestCreateAttributesCoverTheCreate(t *testing.T) {
	f := newFixture(t, nil)
	allowed := dynamo.CreateAttributes()
	rec := idempotency.Record{Key: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", UserID: "user-a", Tenant: "tenant-a",
		Function: ticket.CreateName, State: idempotency.Completed, Fingerprint: "fp", Result: []byte(`{"ok":true}`), CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	id := ticket.NewID()
	rec.TicketID = id
	tk := ticket.Ticket{ID: id, Tenant: "tenant-a", UserID: "user-a", Title: "t", Description: "d", Priority: "high", Tags: []string{"x"},
		RequestID: "req-1", OperationKey: rec.Key, CreatedAt: t0}
	out := &delivery.Record{State: delivery.Queued, Destination: "webhook", Key: delivery.Key(rec.Key, id), Since: t0, NextAt: t0, Version: 1}
	var kinds []string
	for _, it := range f.store.CreateInput(rec, tk, out, t0).TransactItems {
		var named []string
		switch {
		case it.Put != nil:
			kinds = append(kinds, "Put "+strings.SplitN(pkOf(it.Put.Item), "#", 2)[0])
			for n := range it.Put.Item {
				named = append(named, n)
			}
			for _, n := range it.Put.ExpressionAttributeNames {
				named = append(named, n)
			}
		case it.Update != nil && strings.HasPrefix(pkOf(it.Update.Key), "ticket#"):
			kinds = append(kinds, "Update ticket")
			for n := range it.Update.Key {
				named = append(named, n)
			}
			for _, n := range it.Update.ExpressionAttributeNames {
				named = append(named, n)
			}
		default:
			t.Fatalf("the create writes an item the test does not know: %+v", it)
		}
		for _, n := range named {
			if !slices.Contains(allowed, n) {
				t.Errorf("a create names %q, which dynamo.CreateAttributes (the callback's dynamodb:Attributes) lacks", n)
			}
		}
	}
	if want := []string{"Put op", "Update ticket"}; !slices.Equal(kinds, want) {
		t.Fatalf("the create writes %q, want %q", kinds, want)
	}
	for _, never := range []string{"audit", "delivery", "dest_id", "dest_url", "delivered_at", "lease_owner", "lease_until", "reason", "maybe_sent"} {
		if slices.Contains(allowed, never) {
			t.Errorf("dynamo.CreateAttributes lets the callback write %q", never)
		}
	}
}

// pkOf is the partition key of key, "" when it has none as a string.
func pkOf(key map[string]types.AttributeValue) string {
	s, _ := key[dynamo.PartitionKey].(*types.AttributeValueMemberS)
	if s == nil {
		return ""
	}
	return s.Value
}
