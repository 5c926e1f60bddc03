package delivery_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
)

// TestALeaseFromBeforeTheMarkCountsAsMaybeSent: a worker of the version
// before the about-to-send mark leased the delivery (its lease writes no
// mark) and died; it may have sent. The takeover by this version counts it
// as maybe sent, never as an attempt that sent nothing: across an upgrade
// a helpdesk that can neither deduplicate nor be looked up gets no second
// ticket, and the delivery is left to a person.
func TestALeaseFromBeforeTheMarkCountsAsMaybeSent(t *testing.T) {
	r := newRig(t, neither)
	id := r.ticket()
	until := t0.Add(policy.LeaseFor())
	ms := func(t time.Time) types.AttributeValue {
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(t.UnixMilli(), 10)}
	}
	// The earlier version's lease, as it wrote it.
	_, err := r.env.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(r.env.Table),
		Key:       map[string]types.AttributeValue{dynamo.PartitionKey: &types.AttributeValueMemberS{Value: "ticket#" + id}},
		UpdateExpression: aws.String("SET prev_lease_owner = :none, prev_lease_until = :zero, lease_owner = :owner, lease_until = :until, " +
			"attempts = attempts + :one, first_sent = :now, dver = dver + :one"),
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":none": &types.AttributeValueMemberS{Value: ""}, ":zero": &types.AttributeValueMemberN{Value: "0"},
			":owner": &types.AttributeValueMemberS{Value: "old-version"}, ":until": ms(until), ":now": ms(t0),
			":one": &types.AttributeValueMemberN{Value: "1"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	r.advance(policy.LeaseFor() + time.Minute)
	rep := r.deliver(id)
	if rep.State != delivery.Uncertain || !r.record(id).MaybeSent {
		t.Fatalf("after the earlier version's dead lease: %+v; want uncertain (it may have sent)", rep)
	}
	if n, _ := r.dest.sent(); n != 0 {
		t.Fatalf("%d creates sent after a lease that may have sent, to a helpdesk that cannot deduplicate", n)
	}
}
