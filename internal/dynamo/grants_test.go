package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/ticket"
)

// TestOneUsersCallsCheckSpreadItems: on DynamoDB every item a transaction
// includes is held until it ends, a ConditionCheck's too. One user's
// creates must not all include one item, or they cancel each other: each
// checks one of dynamo.GrantShards copies of the grant, by its operation
// key, and none checks the user's record.
func TestOneUsersCallsCheckSpreadItems(t *testing.T) {
	f := newFixture(t, nil)
	n := dynamo.GrantShards * 100
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

// TestATableWithoutGrantCopies: a user written before the copies existed
// (its record alone) is checked on its record, as before, until
// Admin.SyncGrants gives it copies; then a create checks a copy.
func TestATableWithoutGrantCopies(t *testing.T) {
	f, proxy := newProxied(t)
	ctx := context.Background()
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	put := func(id string, active bool) {
		t.Helper()
		_, err := f.env.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(f.env.Table), Item: map[string]types.AttributeValue{
			"pk": s("user#" + id), "kind": s("user"), "tenant_id": s("tenant-a"), "name": s(id),
			"active": &types.AttributeValueMemberBOOL{Value: active}, "functions": &types.AttributeValueMemberSS{Value: []string{ticket.CreateName, ticket.GetName}},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	put("old-user", true)
	put("old-disabled", false)
	claim := func(user, key string) (idempotency.Record, ticket.Ticket) {
		rec := idempotency.Record{Key: key, UserID: user, Tenant: "tenant-a", Function: ticket.CreateName,
			State: idempotency.Completed, Fingerprint: "fp", CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
		return rec, ticket.Ticket{ID: ticket.NewID(), Tenant: "tenant-a", UserID: user, CreatedAt: t0}
	}
	seen := proxy.Seen("TransactWriteItems")
	rec, tk := claim("old-user", "k-old-1")
	if existing, err := f.store.Create(ctx, rec, tk, nil); err != nil || existing != nil {
		t.Fatalf("a user with its record alone: %v, %v", existing, err)
	}
	if got := proxy.Seen("TransactWriteItems") - seen; got != 2 {
		t.Errorf("%d transactions, want 2: the copy is missing, then the record is checked", got)
	}
	rec, tk = claim("old-disabled", "k-old-2")
	if _, err := f.store.Create(ctx, rec, tk, nil); !errors.Is(err, identity.ErrRevoked) {
		t.Fatalf("a disabled user with its record alone: %v, want ErrRevoked", err)
	}
	if _, _, _, err := f.store.ReadTicket(ctx, "old-user", tk.ID); err != nil {
		t.Fatalf("get_ticket of a user with its record alone: %v", err)
	}

	n, err := dynamo.NewAdmin(f.env.Client, f.env.Table).SyncGrants(ctx)
	if err != nil || n < 2 {
		t.Fatalf("SyncGrants = %d, %v", n, err)
	}
	seen = proxy.Seen("TransactWriteItems")
	rec, tk = claim("old-user", "k-old-3")
	if existing, err := f.store.Create(ctx, rec, tk, nil); err != nil || existing != nil {
		t.Fatalf("after SyncGrants: %v, %v", existing, err)
	}
	if got := proxy.Seen("TransactWriteItems") - seen; got != 1 {
		t.Errorf("%d transactions after SyncGrants, want 1", got)
	}
	rec, tk = claim("old-disabled", "k-old-4")
	if _, err := f.store.Create(ctx, rec, tk, nil); !errors.Is(err, identity.ErrRevoked) {
		t.Fatalf("a disabled user after SyncGrants: %v, want ErrRevoked", err)
	}
}
