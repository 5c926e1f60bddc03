package perf

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/ticket"
)

// AIVAXCost is the BCrypt cost AIVAX hashes nonces at.
const AIVAXCost = 9

// FloorResult compares single-client calls with their floor: one BCrypt
// verification of the same nonce plus the same TransactWriteItems sent by
// the bare SDK client to the same store, sampled alternately in one run.
type FloorResult struct {
	Kind string
	// Call is the latency of the call through the local HTTP path.
	Call Durations
	// Bcrypt, Store and Floor (their sum) are the floor samples.
	Bcrypt, Store, Floor Durations
	// Requests counts the store requests of the calls, per operation.
	Requests map[string]int64
}

// Ratio is p50(call) / p50(floor).
func (r FloorResult) Ratio() float64 { return float64(r.Call.P50()) / float64(r.Floor.P50()) }

// floorCall is the record and ticket a create_ticket call of CreateBody
// writes, for the floor's own transaction.
func floorCall(key string, now time.Time) (idempotency.Record, ticket.Ticket) {
	id := ticket.NewID()
	fp := "3f7d0c1e9a5b2d4c6e8f0a1b3c5d7e9f1a2b4c6d8e0f1a3b5c7d9e1f2a4b6c8d"
	rec := idempotency.Record{Key: key, UserID: "user-a", Tenant: "tenant-a", Function: ticket.CreateName,
		State: idempotency.Completed, Fingerprint: fp, TicketID: id,
		Result: []byte(`{"status":"created","ticket_id":"` + id + `"}`), CreatedAt: now, ExpiresAt: now.Add(24 * time.Hour)}
	t := ticket.Ticket{ID: id, Tenant: "tenant-a", UserID: "user-a", Title: "Cannot sign in",
		Description: "Since this morning the login page says my password is wrong.\nI reset it twice.",
		Priority:    "high", Tags: []string{"login", "web"}, CreatedAt: now, OperationKey: key, RequestID: "floor-" + key}
	return rec, t
}

// Floor runs n samples of each kind (created, then deduplicated) or until
// budget is spent, against a fresh oncecall service over st.
func Floor(ctx context.Context, st *Store, n int, budget time.Duration) ([]FloorResult, error) {
	svc, err := StartService(ctx, st.URL, "oncecall-floor")
	if err != nil {
		return nil, err
	}
	defer func() { _ = svc.Close() }()
	hash, err := nonce.Generate(localdb.DemoHookKey, AIVAXCost)
	if err != nil {
		return nil, err
	}
	v, err := nonce.NewVerifier(0, localdb.DemoHookKey)
	if err != nil {
		return nil, err
	}
	client := NewClient(hash)
	defer client.Close()
	raw := st.Client()
	shape := dynamo.New(raw, svc.Table) // builds the transaction, sends nothing

	floorSample := func(key string, wantCancel bool) (time.Duration, time.Duration, error) {
		rec, t := floorCall(key, time.Now())
		in := shape.CreateInput(rec, t, nil, time.Now())
		t0 := time.Now()
		if err := v.Verify(hash); err != nil {
			return 0, 0, err
		}
		t1 := time.Now()
		_, err := raw.TransactWriteItems(ctx, in)
		t2 := time.Now()
		if err := checkFloorWrite(err, wantCancel); err != nil {
			return 0, 0, err
		}
		return t1.Sub(t0), t2.Sub(t1), nil
	}

	// Warm up: connections, code paths.
	for i := range 3 {
		if _, err := client.Expect(svc.URL, CreateBody("user-a", "warm-"+strconv.Itoa(i)), "created"); err != nil {
			return nil, err
		}
		if _, _, err := floorSample("warm-"+strconv.Itoa(i), false); err != nil {
			return nil, err
		}
	}
	var out []FloorResult
	for _, kind := range []string{"created", "deduplicated"} {
		if err := st.Prune(ctx, svc.Table); err != nil {
			return nil, err
		}
		if kind == "deduplicated" {
			// The replays' operations exist before their loop starts.
			if _, err := client.Expect(svc.URL, CreateBody("user-a", "replayed"), "created"); err != nil {
				return nil, err
			}
			if _, _, err := floorSample("replayed", false); err != nil {
				return nil, err
			}
		}
		r := FloorResult{Kind: kind, Requests: map[string]int64{}}
		deadline := time.Now().Add(budget)
		for i := 0; i < n && time.Now().Before(deadline); i++ {
			if kind == "created" && i > 0 && i%25 == 0 {
				// Between samples: keep the table small (see Store.Prune).
				if err := st.Prune(ctx, svc.Table); err != nil {
					return nil, err
				}
			}
			rid, key := "c-"+strconv.Itoa(i), "c-"+strconv.Itoa(i)
			if kind == "deduplicated" {
				rid, key = "replayed", "replayed"
			}
			call := func() error {
				before := st.Front.Counts()
				d, err := client.Expect(svc.URL, CreateBody("user-a", rid), kind)
				if err != nil {
					return err
				}
				for k, c := range st.Front.Counts().Since(before, svc.Table) {
					r.Requests[k] += c
				}
				r.Call = append(r.Call, d)
				return nil
			}
			floor := func() error {
				b, s, err := floorSample(key, kind == "deduplicated")
				if err != nil {
					return err
				}
				r.Bcrypt, r.Store, r.Floor = append(r.Bcrypt, b), append(r.Store, s), append(r.Floor, b+s)
				return nil
			}
			first, second := call, floor
			if i%2 == 1 {
				first, second = floor, call
			}
			if err := first(); err != nil {
				return nil, err
			}
			if err := second(); err != nil {
				return nil, err
			}
		}
		out = append(out, r)
	}
	return out, nil
}

// checkFloorWrite accepts a committed transaction, or, for a replay, the
// cancellation of a taken claim that carries the old item, as oncecall's
// own replay gets it.
func checkFloorWrite(err error, wantCancel bool) error {
	if !wantCancel {
		return err
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || len(tce.CancellationReasons) < 1 ||
		aws.ToString(tce.CancellationReasons[0].Code) != "ConditionalCheckFailed" || len(tce.CancellationReasons[0].Item) == 0 {
		return fmt.Errorf("floor replay: want a cancelled claim with its old item, got %w", err)
	}
	return nil
}
