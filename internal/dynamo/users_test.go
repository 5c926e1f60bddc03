package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/identity"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// writes counts the write requests among ops.
func writes(ops map[string]int64) int64 {
	return ops["PutItem"] + ops["UpdateItem"] + ops["DeleteItem"] + ops["TransactWriteItems"] + ops["BatchWriteItem"]
}

// tableItems counts every item of the table, whatever its kind.
func tableItems(t *testing.T, env *dynamotest.Env) int {
	t.Helper()
	n := 0
	var start map[string]types.AttributeValue
	for {
		out, err := env.Client.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(env.Table), ConsistentRead: aws.Bool(true),
			Select: types.SelectCount, ExclusiveStartKey: start})
		if err != nil {
			t.Fatal(err)
		}
		n += int(out.Count)
		if start = out.LastEvaluatedKey; len(start) == 0 {
			return n
		}
	}
}

// TestAUserIsOneItemAndAChangeOneWrite: a user is one item of the table,
// adding it and changing it are one write each, and a created call writes
// the operation and the ticket, 5 write units with the ticket's lookup
// entry, as the store's answers report them.
func TestAUserIsOneItemAndAChangeOneWrite(t *testing.T) {
	env := dynamotest.New(t)
	ctx := context.Background()
	if _, err := localdb.SeedDemo(ctx, dynamo.New(env.Client, env.Table)); err != nil {
		t.Fatal(err)
	}
	if n, want := tableItems(t, env), len(localdb.DemoUsers); n != want {
		t.Errorf("a table seeded with %d demo users holds %d items", want, n)
	}
	if w := writes(env.Requests.Operations()); w != int64(len(localdb.DemoUsers)) {
		t.Errorf("seeding %d demo users took %d writes", len(localdb.DemoUsers), w)
	}

	admin := dynamo.NewAdmin(env.Client, env.Table)
	env.Requests.Reset()
	if _, err := admin.AddUser(ctx, identity.User{ExternalID: "user-f", Tenant: "tenant-c", Active: true, Functions: []string{ticket.GetName}}); err != nil {
		t.Fatal(err)
	}
	if w := writes(env.Requests.Operations()); w != 1 {
		t.Errorf("user add took %d writes (%v), want 1", w, env.Requests.Operations())
	}
	env.Requests.Reset()
	read, err := admin.User(ctx, "user-f")
	if err != nil {
		t.Fatal(err)
	}
	to := read.User
	to.Active = false
	if _, err := admin.UpdateUser(ctx, read, to); err != nil {
		t.Fatal(err)
	}
	if w := writes(env.Requests.Operations()); w != 1 {
		t.Errorf("user disable took %d writes (%v), want 1", w, env.Requests.Operations())
	}

	f := newFixture(t, nil)
	rec, tk := f.claim("k-units")
	f.env.Requests.Reset()
	if existing, taken, err := f.store.Create(ctx, rec, tk, nil); err != nil || taken {
		t.Fatalf("Create: %v %v", existing, err)
	}
	// Two items of about 1 KB written in a transaction, 2 units each,
	// and the ticket's lookup index entry: the user's record is not among
	// them.
	if c := f.env.Requests.Capacity()["TransactWriteItems"]; c.Reported != 1 || c.Total().Write > 5 {
		t.Errorf("a created call: %v write units (%+v), want 5 or fewer", c.Total().Write, c)
	}
}

// TestAChangeWhoseAnswerWasLostIsKnownByItsVersion: each user write
// applies and its answer is lost; the store sends it again, meets its own
// write and reports success, by the record's version (no clock is read),
// having written once.
func TestAChangeWhoseAnswerWasLostIsKnownByItsVersion(t *testing.T) {
	env := dynamotest.New(t)
	proxy := dynamotest.NewProxy(t, env.Endpoint)
	admin := dynamo.NewAdmin(dynamotest.NewClient(t, proxy.URL, nil), env.Table)
	ctx := context.Background()
	frank := identity.User{ExternalID: "user-f", Tenant: "tenant-c", Name: "frank", Active: true, Functions: []string{ticket.GetName, ticket.CreateName}}

	proxy.Inject("PutItem", dynamotest.Fault{AfterCommit: true})
	if r, err := admin.AddUser(ctx, frank); err != nil || r.Version != 0 {
		t.Fatalf("add whose answer was lost: %+v, %v", r, err)
	}
	if n := proxy.Seen("PutItem"); n != 2 {
		t.Errorf("%d PutItem requests, want 2 (the lost one and its repeat)", n)
	}
	// Another user's add of the same id is refused, with the record.
	other := frank
	other.Tenant = "tenant-x"
	if r, err := admin.AddUser(ctx, other); !errors.Is(err, dynamo.ErrUserExists) || r.Tenant != "tenant-c" {
		t.Fatalf("add over an existing user: %+v, %v; want ErrUserExists with the record", r, err)
	}

	read, err := admin.User(ctx, "user-f")
	if err != nil {
		t.Fatal(err)
	}
	to := read.User
	to.Active = false
	proxy.Inject("UpdateItem", dynamotest.Fault{AfterCommit: true})
	next, err := admin.UpdateUser(ctx, read, to)
	if err != nil || next.Version != 1 || next.Active {
		t.Fatalf("disable whose answer was lost: %+v, %v", next, err)
	}
	// The same change from the same read, by another operator, is not
	// taken for its own: it conflicts.
	if _, err := admin.UpdateUser(ctx, read, to); !errors.Is(err, dynamo.ErrConflict) {
		t.Fatalf("the same change again from the old read: %v, want ErrConflict", err)
	}

	now, err := admin.User(ctx, "user-f")
	if err != nil || now.Version != 1 {
		t.Fatal(now, err)
	}
	proxy.Inject("DeleteItem", dynamotest.Fault{AfterCommit: true})
	if err := admin.DeleteUser(ctx, now); err != nil {
		t.Fatalf("delete whose answer was lost: %v", err)
	}
	if _, err := admin.User(ctx, "user-f"); !errors.Is(err, identity.ErrUnknown) {
		t.Fatalf("after delete: %v", err)
	}
	if err := admin.DeleteUser(ctx, now); !errors.Is(err, identity.ErrUnknown) {
		t.Fatalf("delete of a deleted user: %v, want identity.ErrUnknown", err)
	}
}

// TestDeleteUserIsConditionalOnTheVersionRead: a delete from a read that
// another change has passed is refused and deletes nothing.
func TestDeleteUserIsConditionalOnTheVersionRead(t *testing.T) {
	env := dynamotest.New(t)
	admin := dynamo.NewAdmin(env.Client, env.Table)
	ctx := context.Background()
	if _, err := admin.AddUser(ctx, identity.User{ExternalID: "user-g", Tenant: "t", Active: true, Functions: []string{ticket.GetName}}); err != nil {
		t.Fatal(err)
	}
	read, err := admin.User(ctx, "user-g")
	if err != nil {
		t.Fatal(err)
	}
	to := read.User
	to.Name = "renamed"
	if _, err := admin.UpdateUser(ctx, read, to); err != nil {
		t.Fatal(err)
	}
	var ce *dynamo.ConflictError
	if err := admin.DeleteUser(ctx, read); !errors.As(err, &ce) || ce.Current == nil || ce.Current.Version != 1 {
		t.Fatalf("delete from a stale read: %v, want a ConflictError at version 1", err)
	}
	if n := env.Count(t, "user"); n != 1 {
		t.Fatalf("%d users after a refused delete", n)
	}
}

// TestRemoveGrantCopies: the copies of grants an earlier version wrote
// (grant#<user>#<n>) are deleted, and nothing else is; a second run finds
// none.
func TestRemoveGrantCopies(t *testing.T) {
	env := dynamotest.New(t)
	ctx := context.Background()
	if _, err := localdb.SeedDemo(ctx, dynamo.New(env.Client, env.Table)); err != nil {
		t.Fatal(err)
	}
	const copies = 40
	for i := range copies {
		_, err := env.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(env.Table), Item: map[string]types.AttributeValue{
			"pk": &types.AttributeValueMemberS{Value: fmt.Sprintf("grant#user-%c#%d", 'a'+i%5, i)}, "kind": &types.AttributeValueMemberS{Value: "grant"},
		}})
		if err != nil {
			t.Fatal(err)
		}
	}
	admin := dynamo.NewAdmin(env.Client, env.Table)
	if n, err := admin.RemoveGrantCopies(ctx); err != nil || n != copies {
		t.Fatalf("RemoveGrantCopies = %d, %v; want %d", n, err, copies)
	}
	if n := tableItems(t, env); n != len(localdb.DemoUsers) {
		t.Errorf("%d items left, want the %d users", n, len(localdb.DemoUsers))
	}
	if n, err := admin.RemoveGrantCopies(ctx); err != nil || n != 0 {
		t.Errorf("a second run = %d, %v", n, err)
	}
}

// renameBetween is an AdminAPI whose first UpdateItem applies, then lets
// another operator rename the user, then loses its answer: the retry meets
// the rename.
type renameBetween struct {
	dynamo.AdminAPI
	other *dynamo.Admin
	done  bool
}

func (r *renameBetween) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	out, err := r.AdminAPI.UpdateItem(ctx, in, opts...)
	if r.done || err != nil {
		return out, err
	}
	r.done = true
	id := strings.TrimPrefix(in.Key[dynamo.PartitionKey].(*types.AttributeValueMemberS).Value, "user#")
	read, rerr := r.other.User(ctx, id)
	if rerr != nil {
		return nil, rerr
	}
	to := read.User
	to.Name = "renamed"
	if _, rerr := r.other.UpdateUser(ctx, read, to); rerr != nil {
		return nil, rerr
	}
	return nil, &smithy.GenericAPIError{Code: "InternalServerError", Message: "answer lost"}
}

// TestADisableMetByALaterChangeMayHaveBeenWritten: operator A's disable
// applies and its answer is lost; operator B renames the user; A's retry
// meets B's version. A is told the change may have been written, with the
// record as it is (disabled, and revoked at A's version): never that
// nothing was written.
func TestADisableMetByALaterChangeMayHaveBeenWritten(t *testing.T) {
	env := dynamotest.New(t)
	ctx := context.Background()
	other := dynamo.NewAdmin(env.Client, env.Table)
	admin := dynamo.NewAdmin(&renameBetween{AdminAPI: env.Client, other: other}, env.Table)
	frank := identity.User{ExternalID: "user-f", Tenant: "tenant-c", Name: "frank", Active: true, Functions: []string{ticket.CreateName}}
	if _, err := other.AddUser(ctx, frank); err != nil {
		t.Fatal(err)
	}
	read, err := admin.User(ctx, "user-f")
	if err != nil {
		t.Fatal(err)
	}
	to := read.User
	to.Active = false
	_, err = admin.UpdateUser(ctx, read, to)
	var ce *dynamo.ConflictError
	if !errors.As(err, &ce) || !ce.MaybeWritten || ce.Current == nil || ce.Current.Active || ce.Current.Revoked != 1 || ce.Current.Version != 2 {
		t.Fatalf("disable met by a rename after its lost answer: %v (%+v), want a conflict that may have been written, the record disabled at version 1", err, ce)
	}
}
