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
// it); the ticket reads as queued, its lease leaves the state as it was
// (an index write saved), its result writes it, and a ticket an earlier
// version wrote with "delivery": "queued" is leased the same way. A second
// lease of a leased ticket is refused either way.
func TestANewTicketIsQueuedByTheAbsenceOfItsState(t *testing.T) {
	o := newOutbox(t)
	ctx := context.Background()
	raw := func(id string) map[string]types.AttributeValue { return rawItem(t, o.env, "ticket#"+id) }
	state := func(item map[string]types.AttributeValue) string {
		if _, ok := item["delivery"]; !ok {
			return "(absent)"
		}
		return str(item, "delivery")
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

	for id, stored := range map[string]string{fresh.ID: "(absent)", legacy.ID: "queued"} {
		_, r, err := o.store.Lease(ctx, id, delivery.Lease{Owner: "w1", From: t0, Until: t0.Add(time.Minute)})
		if err != nil || r.State != delivery.Queued {
			t.Fatalf("Lease(%s) = %+v, %v; want the queued delivery leased", id, r, err)
		}
		if s := state(raw(id)); s != stored {
			t.Errorf("after its lease ticket %s's stored state is %q, want %q", id, s, stored)
		}
		if _, _, err := o.store.Lease(ctx, id, delivery.Lease{Owner: "w2", From: t0, Until: t0.Add(time.Minute)}); err == nil {
			t.Errorf("a second lease of %s while the first holds = %v, want refused", id, err)
		}
		if err := o.store.Defer(ctx, id, "w1", t0.Add(time.Minute)); err != nil {
			t.Errorf("Defer(%s) by its lease's owner = %v", id, err)
		}
		r.Attempts++
		r.State, r.Since, r.NextAt = delivery.Delivered, t0, time.Time{}
		r.DeliveredAt, r.Receipt = t0, delivery.Receipt{ID: "1"}
		if err := o.store.Finish(ctx, id, "w1", r); err != nil {
			t.Fatalf("Finish(%s) = %v", id, err)
		}
		if s := state(raw(id)); s != "delivered" {
			t.Errorf("after its result ticket %s's stored state is %q, want delivered", id, s)
		}
	}
}
