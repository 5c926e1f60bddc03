package perf

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/local/localdb"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFrontCountsAndReturnsOldItems checks what the benchmarks rely on: the
// front counts each request once, per table and operation, and a taken
// claim comes back with its old item, so a replay is one request as on
// DynamoDB.
func TestFrontCountsAndReturnsOldItems(t *testing.T) {
	st, err := StartStore()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	client := st.Client()
	defer client.Options().HTTPClient.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	ctx := context.Background()
	if _, err := dynamo.EnsureTable(ctx, client, "front-test"); err != nil {
		t.Fatal(err)
	}
	store := dynamo.New(client, "front-test")
	if _, err := localdb.SeedDemo(ctx, store); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	claim := func() (idempotency.Record, bool, error) {
		rec, tk := floorCall("k", now)
		return store.Create(ctx, rec, tk, nil)
	}
	before := st.Front.Counts()
	if existing, taken, err := claim(); err != nil || taken {
		t.Fatalf("first claim: %v %v", existing, err)
	}
	existing, taken, err := claim()
	if err != nil || !taken || existing.State != idempotency.Completed {
		t.Fatalf("second claim: %+v %v", existing, err)
	}
	got := st.Front.Counts().Since(before, "front-test")
	if len(got) != 1 || got["TransactWriteItems"] != 2 {
		t.Errorf("counts %v, want 2 TransactWriteItems and nothing else (no GetItem fallback)", got)
	}
	if other := st.Front.Counts().Since(before, "another"); len(other) != 0 {
		t.Errorf("another table counted %v", other)
	}
}

func TestQuantile(t *testing.T) {
	ds := Durations{5, 1, 4, 2, 3}
	if ds.P50() != 3 || ds.Quantile(0) != 1 || ds.Quantile(1) != 5 || ds.P99() != 5 {
		t.Errorf("quantiles of %v: p50 %v min %v max %v p99 %v", ds, ds.P50(), ds.Quantile(0), ds.Quantile(1), ds.P99())
	}
	if (Durations{}).P50() != 0 {
		t.Error("empty p50")
	}
}

// TestFrontSumsCapacityAndAsksForIt checks the capacity figures' source:
// the front sums what the store's answers report, per table and
// operation, and makes a request that does not ask for capacity ask, as a
// peer's SDK may not; oncecall's own requests already ask.
func TestFrontSumsCapacityAndAsksForIt(t *testing.T) {
	st, err := StartStore()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	st.Front.AskCapacity = true
	client := st.Client()
	defer client.Options().HTTPClient.(interface{ CloseIdleConnections() }).CloseIdleConnections()
	ctx := context.Background()
	const table = "front-capacity"
	if _, err := dynamo.EnsureTable(ctx, client, table); err != nil {
		t.Fatal(err)
	}
	store := dynamo.New(client, table)
	if _, err := localdb.SeedDemo(ctx, store); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec, tk := floorCall("k", now)
	before := st.Front.Capacity()
	if existing, taken, err := store.Create(ctx, rec, tk, nil); err != nil || taken {
		t.Fatalf("first claim: %v %v", existing, err)
	}
	created := st.Front.Capacity().Since(before, table)["TransactWriteItems"]
	if created.Requests != 1 || created.Reported != 1 || created.Table.Write <= 0 || created.Indexes[dynamo.LookupIndex].Write <= 0 {
		t.Errorf("created call: %+v, want table and lookup index write units from the answer", created)
	}
	before = st.Front.Capacity()
	rec, tk = floorCall("k", now)
	if existing, taken, err := store.Create(ctx, rec, tk, nil); err != nil || !taken {
		t.Fatalf("second claim: %v %v", existing, err)
	}
	replay := st.Front.Capacity().Since(before, table)["TransactWriteItems"]
	if replay.Requests != 1 || replay.Reported != 0 || replay.Total() != (dynamo.Units{}) {
		t.Errorf("replay: %+v, want one answer without capacity", replay)
	}
	if added := st.Front.Added(); len(added) != 0 {
		t.Errorf("the front added the field to oncecall's requests: %v", added)
	}

	// A client that does not ask, as the peer's SDK does not.
	hc := dynamo.HTTPClient()
	defer hc.CloseIdleConnections()
	cfg := dynamo.LocalConfig("")
	cfg.HTTPClient = hc
	bare := dynamodb.NewFromConfig(cfg, func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(st.URL) })
	before = st.Front.Capacity()
	out, err := bare.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{dynamo.PartitionKey: &types.AttributeValueMemberS{Value: "user#user-a"}}})
	if err != nil || len(out.Item) == 0 {
		t.Fatalf("GetItem: %v, %d attributes", err, len(out.Item))
	}
	if got := st.Front.Added().Since(Counts{}, table); got["GetItem"] != 1 || len(got) != 1 {
		t.Errorf("added %v, want the one GetItem", got)
	}
	if got := st.Front.Capacity().Since(before, table)["GetItem"]; got.Reported != 1 || got.Table.Read != 1 {
		t.Errorf("GetItem capacity %+v, want 1 read unit from the answer", got)
	}
}
