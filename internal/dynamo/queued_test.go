package dynamo_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oncecall/oncecall/internal/delivery"
)

// TestANewTicketIsQueuedByTheAbsenceOfItsState: a create with a
// destination writes no delivery state (the callback's role may not name
// it); the ticket reads as queued, its first lease writes the state, and a
// ticket an earlier version wrote with "delivery": "queued" is leased the
// same way. A second lease of a leased ticket is refused either way.
func TestANewTicketIsQueuedByTheAbsenceOfItsState(t *testing.T) {
	o := newOutbox(t)
	ctx := context.Background()
	raw := func(id string) map[string]types.AttributeValue {
		t.Helper()
		out, err := o.env.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(o.env.Table), ConsistentRead: aws.Bool(true),
			Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ticket#" + id}}})
		if err != nil || out.Item == nil {
			t.Fatalf("read ticket %s: %v", id, err)
		}
		return out.Item
	}
	state := func(item map[string]types.AttributeValue) string {
		s, _ := item["delivery"].(*types.AttributeValueMemberS)
		if s == nil {
			return "(absent)"
		}
		return s.Value
	}

	fresh := o.ticket(alice, "r-new", t0)
	if s := state(raw(fresh.ID)); s != "(absent)" {
		t.Fatalf("a new ticket's stored delivery state is %q, want none", s)
	}
	if d, err := o.store.Delivery(ctx, fresh.ID); err != nil || d == nil || d.State != delivery.Queued {
		t.Fatalf("a new ticket's delivery reads %+v, %v; want queued", d, err)
	}

	legacy := o.ticket(alice, "r-earlier", t0)
	if _, err := o.env.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: aws.String(o.env.Table),
		Key:                       map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ticket#" + legacy.ID}},
		UpdateExpression:          aws.String("SET delivery = :q"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":q": &types.AttributeValueMemberS{Value: "queued"}}}); err != nil {
		t.Fatal(err)
	}

	for _, id := range []string{fresh.ID, legacy.ID} {
		if _, r, err := o.store.Lease(ctx, id, delivery.Lease{Owner: "w1", From: t0, Until: t0.Add(time.Minute)}); err != nil || r.State != delivery.Queued {
			t.Fatalf("Lease(%s) = %+v, %v; want the queued delivery leased", id, r, err)
		}
		if s := state(raw(id)); s != "queued" {
			t.Errorf("after its lease ticket %s's stored state is %q, want queued", id, s)
		}
		if _, _, err := o.store.Lease(ctx, id, delivery.Lease{Owner: "w2", From: t0, Until: t0.Add(time.Minute)}); err == nil {
			t.Errorf("a second lease of %s while the first holds = %v, want refused", id, err)
		}
	}
}
