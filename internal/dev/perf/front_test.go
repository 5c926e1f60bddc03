package perf

import (
	"context"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/dev/localdb"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
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
	claim := func() (*idempotency.Record, error) {
		rec, tk := floorCall("k", now)
		return store.Create(ctx, rec, tk, nil)
	}
	before := st.Front.Counts()
	if existing, err := claim(); err != nil || existing != nil {
		t.Fatalf("first claim: %v %v", existing, err)
	}
	existing, err := claim()
	if err != nil || existing == nil || existing.State != idempotency.Completed {
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
