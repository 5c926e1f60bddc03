package perf

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/outcome"
)

// OutcomeResult compares the application's outcome read (outcome.Reader,
// what GET /outcome calls) with its floor: one strongly consistent GetItem
// of the same item by the bare SDK client, sampled alternately.
type OutcomeResult struct {
	Read, Floor Durations
	// Requests counts the store requests of the reads, per operation.
	Requests map[string]int64
}

// Ratio is p50(read) / p50(GetItem).
func (r OutcomeResult) Ratio() float64 { return float64(r.Read.P50()) / float64(r.Floor.P50()) }

// Outcome runs n samples of each, or until budget is spent, reading the
// outcome of an operation a call created, on a fresh service over st.
func Outcome(ctx context.Context, st *Store, n int, budget time.Duration) (OutcomeResult, error) {
	svc, err := StartService(ctx, st.URL, "oncecall-outcome")
	if err != nil {
		return OutcomeResult{}, err
	}
	defer func() { _ = svc.Close() }()
	hash, err := nonce.Generate(localdb.DemoHookKey, nonce.MinCost)
	if err != nil {
		return OutcomeResult{}, err
	}
	client := NewClient(hash)
	defer client.Close()
	if _, err := client.Expect(svc.URL, CreateBody("user-a", "outcome-1"), "created"); err != nil {
		return OutcomeResult{}, err
	}
	reader := outcome.Reader{Store: svc.Store}
	raw := st.Client()
	in := &dynamodb.GetItemInput{TableName: aws.String(svc.Table), Key: svc.Store.RequestRecordKey("user-a", "outcome-1"), ConsistentRead: aws.Bool(true)}
	r := OutcomeResult{Requests: map[string]int64{}}
	read := func(record bool) error {
		before := st.Front.Counts()
		t0 := time.Now()
		v, err := reader.Read(ctx, "user-a", "outcome-1")
		d := time.Since(t0)
		if err != nil {
			return err
		}
		if v.Status != outcome.StatusFound {
			return fmt.Errorf("outcome read: %s, want found", v.Status)
		}
		if record {
			r.Read = append(r.Read, d)
			for k, c := range st.Front.Counts().Since(before, svc.Table) {
				r.Requests[k] += c
			}
		}
		return nil
	}
	floor := func(record bool) error {
		t0 := time.Now()
		out, err := raw.GetItem(ctx, in)
		d := time.Since(t0)
		if err != nil {
			return err
		}
		if len(out.Item) == 0 {
			return fmt.Errorf("floor GetItem found no item")
		}
		if record {
			r.Floor = append(r.Floor, d)
		}
		return nil
	}
	for range 20 { // warm up
		if err := read(false); err != nil {
			return r, err
		}
		if err := floor(false); err != nil {
			return r, err
		}
	}
	deadline := time.Now().Add(budget)
	for i := 0; i < n && time.Now().Before(deadline); i++ {
		first, second := read, floor
		if i%2 == 1 {
			first, second = floor, read
		}
		if err := first(true); err != nil {
			return r, err
		}
		if err := second(true); err != nil {
			return r, err
		}
	}
	return r, nil
}

func outcomePart(ctx context.Context, o Options, w *strings.Builder) error {
	w.WriteString("## The application's outcome read\n\n")
	st, err := StartStore()
	if err != nil {
		return err
	}
	defer func() { _ = st.Close() }()
	r, err := Outcome(ctx, st, 4*o.FloorSamples, o.FloorBudget)
	if err != nil {
		return err
	}
	w.WriteString("One create_ticket call makes an operation; then `outcome.Reader.Read` (what `GET /outcome` calls, without a destination) reads it by user and request id, each sample alternating with the floor: one strongly consistent `GetItem` of the same request item sent by the bare SDK client to the same embedded store on loopback. The HTTP path and the credential check are not in either.\n\n")
	w.WriteString("| Samples | Read p50 | Read p99 | GetItem p50 | p50 read ÷ GetItem | Store requests per read |\n|---:|---:|---:|---:|---:|---|\n")
	fmt.Fprintf(w, "| %d | %s | %s | %s | **%s** | %s |\n\n", len(r.Read), ms(r.Read.P50()), ms(r.Read.P99()), ms(r.Floor.P50()), ftoa(r.Ratio(), 3), Describe(r.Requests, len(r.Read)))
	target(w, "p50 of an outcome read ÷ one GetItem", ftoa(r.Ratio(), 3), "≤ 1.20", r.Ratio() <= 1.20)
	target(w, "store requests per outcome read", strconv.FormatFloat(float64(r.Requests["GetItem"])/float64(max(1, len(r.Read))), 'f', 2, 64), "1 GetItem, no Query or Scan",
		len(r.Requests) == 1 && r.Requests["GetItem"] == int64(len(r.Read)))
	return nil
}
