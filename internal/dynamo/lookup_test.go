package dynamo_test

import (
	"context"
	"fmt"
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

// rawItem reads the item under pk as stored.
func rawItem(t *testing.T, env *dynamotest.Env, pk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := env.Client.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: &env.Table, ConsistentRead: new(true),
		Key: map[string]types.AttributeValue{dynamo.PartitionKey: &types.AttributeValueMemberS{Value: pk}}})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func str(item map[string]types.AttributeValue, name string) string {
	if s, ok := item[name].(*types.AttributeValueMemberS); ok {
		return s.Value
	}
	return fmt.Sprintf("<%T>", item[name])
}

// created writes one create_ticket operation and its ticket through the
// callback's own transaction.
func created(t *testing.T, store *dynamo.Store, u identity.User, key, requestID string, at time.Time) ticket.Ticket {
	t.Helper()
	id := ticket.NewID()
	rec := idempotency.Record{
		Key: key, UserID: u.ExternalID, Tenant: u.Tenant, Function: ticket.CreateName,
		State: idempotency.Completed, Fingerprint: "fp-" + key, TicketID: id,
		Result:    []byte(`{"status":"created","ticket_id":"` + id + `"}`),
		CreatedAt: at, ExpiresAt: at.Add(time.Hour),
	}
	tk := ticket.Ticket{ID: id, Tenant: u.Tenant, UserID: u.ExternalID, Title: "t " + key, Priority: "normal",
		CreatedAt: at, OperationKey: key, RequestID: requestID}
	if existing, taken, err := store.Create(context.Background(), rec, tk, nil); err != nil || taken {
		t.Fatalf("Create %s = %v, %v", key, existing, err)
	}
	return tk
}

func TestLookupAttributes(t *testing.T) {
	env := dynamotest.New(t)
	store := dynamo.New(env.Client, env.Table)
	u := identity.User{ExternalID: "user-q", Tenant: `tenant "q"`, Active: true, Functions: []string{ticket.CreateName}}
	if err := store.PutUser(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	item := rawItem(t, env, "user#user-q")
	if got := str(item, "lk"); got != `["tenant","tenant \"q\""]` {
		t.Errorf("user lk = %s", got)
	}
	if got := str(item, "lk_sort"); got != "user-q" {
		t.Errorf("user lk_sort = %s", got)
	}
	tk := created(t, store, u, "k-lookup", "request-1", time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600)))
	item = rawItem(t, env, "ticket#"+tk.ID)
	if got := str(item, "lk"); got != `["request","tenant \"q\"","request-1"]` {
		t.Errorf("ticket lk = %s", got)
	}
	if got := str(item, "lk_sort"); got != "2026-01-02T02:04:05.000000600Z" {
		t.Errorf("ticket lk_sort = %s, want fixed-width UTC", got)
	}
}
