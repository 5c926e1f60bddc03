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
// outcome of an operation a call created, on a fresh service over st;
// with dest, the service has a destination (a webhook nothing sends to:
// the ticket stays queued) and the read returns the ticket's delivery.
func Outcome(ctx context.Context, st *Store, n int, budget time.Duration, dest bool) (OutcomeResult, error) {
	var (
		svc *Service
		err error
	)
	if dest {
		svc, _, _, err = destService(ctx, st.URL, "oncecall-outcome-dest", "http://127.0.0.1:9/never-called", 0)
	} else {
		svc, err = StartService(ctx, st.URL, "oncecall-outcome")
	}
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
	key, err := svc.Store.RequestRecordKey(ctx, "user-a", "outcome-1")
	if err == nil && key == nil {
		err = fmt.Errorf("no id key in the table after a create")
	}
	if err != nil {
		return OutcomeResult{}, err
	}
	in := &dynamodb.GetItemInput{TableName: aws.String(svc.Table), Key: key, ConsistentRead: aws.Bool(true)}
	r := OutcomeResult{Requests: map[string]int64{}}
	read := func(record bool) error {
		before := st.Front.Counts()
		t0 := time.Now()
		v, err := reader.Read(ctx, "user-a", "outcome-1")
		d := time.Since(t0)
		if err != nil {
			return err
		}
		if v.Status != outcome.StatusFound || (v.Delivery != nil) != dest {
			return fmt.Errorf("outcome read: %s, delivery %v; want found, with a delivery only with a destination", v.Status, v.Delivery)
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
	w.WriteString("One create_ticket call makes an operation; then `outcome.Reader.Read` (what `GET /outcome` calls) reads it by user and request id, each sample alternating with the floor: one strongly consistent `GetItem` of the same item (the request id's first ticket, which holds the operation's record and its delivery) sent by the bare SDK client to the same embedded store on loopback. With a destination (a webhook; nothing is sent, so the ticket stays queued) the answer carries the ticket's delivery, read from the same item. The id key that names the ticket is read once per Store, before the samples. The HTTP path and the credential check are not in either.\n\n")
	w.WriteString("| Deployment | Samples | Read p50 | Read p99 | GetItem p50 | p50 read ÷ GetItem | Store requests per read |\n|---|---:|---:|---:|---:|---:|---|\n")
	type row struct {
		name string
		r    OutcomeResult
	}
	var rows []row
	for _, dest := range []bool{false, true} {
		r, err := Outcome(ctx, st, 4*o.FloorSamples, o.FloorBudget, dest)
		if err != nil {
			return err
		}
		name := "no destination"
		if dest {
			name = "a destination"
		}
		rows = append(rows, row{name, r})
		fmt.Fprintf(w, "| %s | %d | %s | %s | %s | **%s** | %s |\n", name, len(r.Read), ms(r.Read.P50()), ms(r.Read.P99()), ms(r.Floor.P50()), ftoa(r.Ratio(), 3), Describe(r.Requests, len(r.Read)))
	}
	w.WriteString("\n")
	for _, x := range rows {
		target(w, "p50 of an outcome read ÷ one GetItem, "+x.name, ftoa(x.r.Ratio(), 3), "≤ 1.20", x.r.Ratio() <= 1.20)
		target(w, "store requests per outcome read, "+x.name, strconv.FormatFloat(float64(x.r.Requests["GetItem"])/float64(max(1, len(x.r.Read))), 'f', 2, 64), "1 GetItem, no Query or Scan",
			len(x.r.Requests) == 1 && x.r.Requests["GetItem"] == int64(len(x.r.Read)))
	}
	return nil
}
