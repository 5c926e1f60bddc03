package dynamo_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
)

// TestRequestRecordIsOneConsistentRead: Create records the operation under
// its user and request id, in its one transaction; RequestRecord reads it
// back with one strongly consistent GetItem, and nil for an id that
// created nothing.
func TestRequestRecordIsOneConsistentRead(t *testing.T) {
	f, proxy := newProxied(t)
	ctx := context.Background()
	rec, tk := f.claim("k1")
	if _, _, err := f.store.Create(ctx, rec, tk, nil); err != nil {
		t.Fatal(err)
	}
	if ops := f.env.Requests.Operations(); !maps.Equal(ops, map[string]int64{"TransactWriteItems": 1}) {
		t.Errorf("Create took %v, want one transaction", ops)
	}
	f.env.Requests.Reset()
	got, err := f.store.RequestRecord(ctx, alice.ExternalID, "r-1")
	if err != nil || got == nil {
		t.Fatalf("RequestRecord = %+v, %v", got, err)
	}
	if got.UserID != alice.ExternalID || got.RequestID != "r-1" || got.Tenant != alice.Tenant || got.Function != rec.Function ||
		got.OperationKey != "k1" || got.TicketID != tk.ID || string(got.Result) != string(rec.Result) ||
		!got.CreatedAt.Equal(t0.Truncate(time.Second)) || got.Operations != 1 {
		t.Errorf("request record %+v", got)
	}
	if ops := f.env.Requests.Operations(); !maps.Equal(ops, map[string]int64{"GetItem": 1}) {
		t.Errorf("RequestRecord took %v, want one GetItem", ops)
	}
	if n := proxy.ConsistentReads("GetItem"); n != 1 {
		t.Errorf("%d of 1 GetItem asked for a consistent read", n)
	}
	for _, c := range [][2]string{{alice.ExternalID, "r-2"}, {"user-b", "r-1"}} {
		if got, err := f.store.RequestRecord(ctx, c[0], c[1]); err != nil || got != nil {
			t.Errorf("RequestRecord(%q, %q) = %+v, %v; want nothing", c[0], c[1], got, err)
		}
	}
}

// TestRequestRecordKeepsTheFirstAndCountsEvery: a second operation under
// the same request id (other arguments, another key) leaves the first
// recorded and counts two; a repeat of the first counts nothing, and
// neither does a lost answer's retry of the same transaction.
func TestRequestRecordKeepsTheFirstAndCountsEvery(t *testing.T) {
	f, proxy := newProxied(t)
	ctx := context.Background()
	rec, tk := f.claim("k1")
	proxy.Inject("TransactWriteItems", dynamotest.Fault{AfterCommit: true})
	if _, _, err := f.store.Create(ctx, rec, tk, nil); err != nil {
		t.Fatal(err)
	}
	again, tkAgain := f.claim("k1")
	if _, taken, err := f.store.Create(ctx, again, tkAgain, nil); err != nil || !taken {
		t.Fatalf("repeat: taken %v, %v", taken, err)
	}
	f.now = f.now.Add(time.Minute)
	other, tkOther := f.claim("k2")
	if _, _, err := f.store.Create(ctx, other, tkOther, nil); err != nil {
		t.Fatal(err)
	}
	got, err := f.store.RequestRecord(ctx, alice.ExternalID, "r-1")
	if err != nil || got == nil {
		t.Fatalf("RequestRecord = %+v, %v", got, err)
	}
	if got.TicketID != tk.ID || got.OperationKey != "k1" || !got.CreatedAt.Equal(t0.Truncate(time.Second)) || got.Operations != 2 {
		t.Errorf("request record %+v; want the first operation (ticket %s) and 2 operations", got, tk.ID)
	}
}

// TestRequestAttributesCoverTheUpdate: every attribute the create's
// Update of the request item names is one of dynamo.RequestAttributes,
// which the callback's UpdateItem is limited to (template.yaml).
func TestRequestAttributesCoverTheUpdate(t *testing.T) {
	f := newFixture(t, nil)
	rec, tk := f.claim("k1")
	allowed := dynamo.RequestAttributes()
	updates := 0
	for _, it := range f.store.CreateInput(rec, tk, nil, t0).TransactItems {
		if it.Update == nil || !strings.HasPrefix(pkOf(it.Update.Key), "request#") {
			continue
		}
		updates++
		for _, n := range it.Update.ExpressionAttributeNames {
			if !slices.Contains(allowed, n) {
				t.Errorf("the request item's Update names %q, which dynamo.RequestAttributes lacks", n)
			}
		}
	}
	if updates != 1 {
		t.Fatalf("%d Updates, want the request item's", updates)
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
