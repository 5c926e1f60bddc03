package dynamo_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/ticket"
)

// TestOneUsersCallsCheckSpreadItems: on DynamoDB every item a transaction
// includes is held until it ends, a ConditionCheck's too. One user's
// creates must not all include one item, or they cancel each other: each
// checks one of dynamo.GrantShards copies of the grant, by its operation
// key, and none checks the user's record.
func TestOneUsersCallsCheckSpreadItems(t *testing.T) {
	f := newFixture(t, nil)
	const n = 1600
	perItem := map[string]int{}
	for i := range n {
		rec := idempotency.Record{Key: fmt.Sprintf("%064x", i*7919), UserID: "user-a", Tenant: "tenant-a", Function: ticket.CreateName,
			State: idempotency.Completed, Fingerprint: "fp", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		in := f.store.CreateInput(rec, ticket.Ticket{ID: ticket.NewID(), Tenant: "tenant-a", UserID: "user-a", CreatedAt: t0}, nil, t0)
		cc := in.TransactItems[0].ConditionCheck
		if cc == nil {
			t.Fatal("the first action is not the user check")
		}
		key := cc.Key[dynamo.PartitionKey].(*types.AttributeValueMemberS).Value
		if key == "user#user-a" {
			t.Fatal("a create checks the user's record: every call of the user would include that one item")
		}
		perItem[key]++
	}
	if len(perItem) != dynamo.GrantShards {
		t.Fatalf("%d items checked by one user's creates, want %d", len(perItem), dynamo.GrantShards)
	}
	for k, c := range perItem {
		if even := n / dynamo.GrantShards; c < even/2 || c > even*3/2 {
			t.Errorf("%s checked by %d of %d creates; an even spread is %d", k, c, n, even)
		}
	}
}
