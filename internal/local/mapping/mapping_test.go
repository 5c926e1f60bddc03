package mapping_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/webhook"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/local/mapping"
	"github.com/oncecall/oncecall/internal/stream"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

const templatePath = "../../../template.yaml"

// fixture is a table with its stream on, as template.yaml declares it, and
// the template's mapping settings.
type fixture struct {
	env     *dynamotest.Env
	set     mapping.Settings
	arn     string
	streams *dynamodbstreams.Client
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	env := dynamotest.New(t)
	set, err := mapping.Read(templatePath, "DeliverFunction")
	if err != nil {
		t.Fatal(err)
	}
	arn, err := dynamo.EnableStream(context.Background(), env.Client, env.Table, set.StreamViewType)
	if err != nil {
		t.Fatal(err)
	}
	streams := dynamodbstreams.NewFromConfig(dynamotest.Config(t), func(o *dynamodbstreams.Options) { o.BaseEndpoint = aws.String(env.Endpoint) })
	return &fixture{env: env, set: set, arn: arn, streams: streams}
}

// run runs a Mapping of h over the fixture's stream until the test ends.
func (f *fixture) run(t *testing.T, set mapping.Settings, h mapping.Handler, onFailure func(mapping.Failure)) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	m := &mapping.Mapping{Settings: set, Streams: f.streams, StreamARN: f.arn, Handler: h, Region: "us-east-1",
		OnFailure: onFailure, PollInterval: 5 * time.Millisecond, RetryBackoff: 5 * time.Millisecond}
	done := make(chan struct{})
	go func() { defer close(done); _ = m.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// put writes an item the template's filter lets through (a new ticket
// queued for delivery) or, with queued false, one it keeps out.
func (f *fixture) put(t *testing.T, pk string, queued bool) {
	t.Helper()
	item := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}}
	if queued {
		item["dest"] = &types.AttributeValueMemberS{Value: "webhook"}
	}
	if _, err := f.env.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(f.env.Table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// invocations records what a handler was given.
type invocations struct {
	mu    sync.Mutex
	calls [][]string // the pk of each record, per invocation
	seqs  [][]string
}

func (iv *invocations) add(ev events.DynamoDBEvent) int {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	var pks, seqs []string
	for _, r := range ev.Records {
		pks = append(pks, r.Change.Keys["pk"].String())
		seqs = append(seqs, r.Change.SequenceNumber)
	}
	iv.calls = append(iv.calls, pks)
	iv.seqs = append(iv.seqs, seqs)
	return len(iv.calls)
}

func (iv *invocations) snapshot() ([][]string, [][]string) {
	iv.mu.Lock()
	defer iv.mu.Unlock()
	return append([][]string(nil), iv.calls...), append([][]string(nil), iv.seqs...)
}

func decode(t *testing.T, raw json.RawMessage) events.DynamoDBEvent {
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Errorf("the handler got an event that is not a stream batch: %v", err)
	}
	return ev
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestFailedRecordIsRetriedFromItsSequenceNumber: the handler answers the
// second record of a batch as failed; the mapping reads the stream again
// from that record's sequence number, so it and the later record come
// again and the first does not. The template's filter kept the user item
// out of every batch.
func TestFailedRecordIsRetriedFromItsSequenceNumber(t *testing.T) {
	f := newFixture(t)
	f.put(t, "ticket#1", true)
	f.put(t, "user#someone", false)
	f.put(t, "ticket#2", true)
	f.put(t, "ticket#3", true)
	var iv invocations
	f.run(t, f.set, func(_ context.Context, raw json.RawMessage) (any, error) {
		ev := decode(t, raw)
		n := iv.add(ev)
		var failed []events.DynamoDBBatchItemFailure
		for _, r := range ev.Records {
			if n == 1 && r.Change.Keys["pk"].String() == "ticket#2" {
				failed = append(failed, events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
			}
		}
		return events.DynamoDBEventResponse{BatchItemFailures: failed}, nil
	}, nil)
	waitFor(t, "a second invocation", func() bool { c, _ := iv.snapshot(); return len(c) >= 2 })
	time.Sleep(50 * time.Millisecond) // nothing more may come
	calls, seqs := iv.snapshot()
	want := [][]string{{"ticket#1", "ticket#2", "ticket#3"}, {"ticket#2", "ticket#3"}}
	if fmt.Sprint(calls) != fmt.Sprint(want) {
		t.Fatalf("invocations %v, want %v", calls, want)
	}
	if seqs[1][0] != seqs[0][1] || seqs[1][1] != seqs[0][2] {
		t.Fatalf("the retry did not resume at the failed record's sequence number: %v", seqs)
	}
}

// TestRecordsPastTheirRetriesGoToOnFailure: a record that fails every time
// is tried 1 + MaxRetries times, then its place goes to the on-failure
// destination and the mapping moves on to later records.
func TestRecordsPastTheirRetriesGoToOnFailure(t *testing.T) {
	f := newFixture(t)
	set := f.set
	set.MaxRetries = 2
	f.put(t, "ticket#bad", true)
	var iv invocations
	var mu sync.Mutex
	var failures []mapping.Failure
	f.run(t, set, func(_ context.Context, raw json.RawMessage) (any, error) {
		ev := decode(t, raw)
		iv.add(ev)
		var failed []events.DynamoDBBatchItemFailure
		for _, r := range ev.Records {
			if r.Change.Keys["pk"].String() == "ticket#bad" {
				failed = append(failed, events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
			}
		}
		return events.DynamoDBEventResponse{BatchItemFailures: failed}, nil
	}, func(fl mapping.Failure) { mu.Lock(); failures = append(failures, fl); mu.Unlock() })
	waitFor(t, "the record given up", func() bool { mu.Lock(); defer mu.Unlock(); return len(failures) == 1 })
	f.put(t, "ticket#good", true)
	waitFor(t, "the next record", func() bool {
		c, _ := iv.snapshot()
		return len(c) > 0 && c[len(c)-1][0] == "ticket#good"
	})
	calls, seqs := iv.snapshot()
	if len(calls) != 4 {
		t.Fatalf("invocations %v, want the bad record 3 times, then the good one", calls)
	}
	mu.Lock()
	defer mu.Unlock()
	if fl := failures[0]; fl.Condition != "RetryAttemptsExhausted" || fl.StartSequenceNumber != seqs[0][0] || fl.BatchSize != 1 || fl.RetryAttempts != 2 {
		t.Fatalf("on-failure %+v", fl)
	}
}

// TestFunctionErrorBisects: a function that fails as a whole on any batch
// holding one record gets the batch split in two until that record is
// alone; the others are delivered meanwhile.
func TestFunctionErrorBisects(t *testing.T) {
	f := newFixture(t)
	set := f.set
	set.MaxRetries = 1
	for i := range 4 {
		f.put(t, fmt.Sprintf("ticket#%d", i), true)
	}
	var iv invocations
	var mu sync.Mutex
	var failures []mapping.Failure
	f.run(t, set, func(_ context.Context, raw json.RawMessage) (any, error) {
		ev := decode(t, raw)
		iv.add(ev)
		for _, r := range ev.Records {
			if r.Change.Keys["pk"].String() == "ticket#2" {
				return nil, fmt.Errorf("cannot handle ticket#2")
			}
		}
		return events.DynamoDBEventResponse{}, nil
	}, func(fl mapping.Failure) { mu.Lock(); failures = append(failures, fl); mu.Unlock() })
	waitFor(t, "the bad record given up", func() bool { mu.Lock(); defer mu.Unlock(); return len(failures) == 1 })
	waitFor(t, "the record after it", func() bool {
		c, _ := iv.snapshot()
		return len(c) > 0 && c[len(c)-1][len(c[len(c)-1])-1] == "ticket#3"
	})
	calls, _ := iv.snapshot()
	// 4 records; halved to 2 (0,1 succeed), then 2,3 fail and halve to 2
	// alone, which fails once more (its one retry) and is given up; then 3.
	want := "[[ticket#0 ticket#1 ticket#2 ticket#3] [ticket#0 ticket#1] [ticket#2 ticket#3] [ticket#2] [ticket#2] [ticket#3]]"
	if fmt.Sprint(calls) != want {
		t.Fatalf("invocations %v, want %s", calls, want)
	}
}

// TestRecordDeliveredTwiceMakesOneCreate: the mapping brings a new ticket
// to the deliver function's own handler, which delivers it; the batch is
// then reported failed (as after a timeout that the handler outlived), so
// the same record comes again: the worker finds it delivered and the
// helpdesk has one create.
func TestRecordDeliveredTwiceMakesOneCreate(t *testing.T) {
	f := newFixture(t)
	store := dynamo.New(f.env.Client, f.env.Table)
	if _, err := localdb.SeedDemo(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	caps := delivery.Capabilities{} // neither deduplicates nor can be looked up
	hd, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{Capabilities: caps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hd.Close() })
	dest, err := webhook.New(hd.WebhookURL(), webhook.Options{Capabilities: caps, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dest.CloseIdleConnections)
	policy := delivery.DefaultPolicy
	policy.Timeout = time.Second
	w := &delivery.Worker{Store: store, Destination: dest, Policy: policy}
	real := stream.New(w, nil).Handle
	var iv invocations
	f.run(t, f.set, func(ctx context.Context, raw json.RawMessage) (any, error) {
		ev := decode(t, raw)
		n := iv.add(ev)
		res, err := real(ctx, raw)
		if n == 1 && err == nil {
			// Delivered, and yet reported failed: the record comes again.
			var failed []events.DynamoDBBatchItemFailure
			for _, r := range ev.Records {
				failed = append(failed, events.DynamoDBBatchItemFailure{ItemIdentifier: r.Change.SequenceNumber})
			}
			return events.DynamoDBEventResponse{BatchItemFailures: failed}, nil
		}
		return res, err
	}, nil)

	id := ticket.NewID()
	now := time.Now()
	key := "op-" + id
	rec := idempotency.Record{Key: key, UserID: "user-a", Tenant: "tenant-a", Function: ticket.CreateName, State: idempotency.Completed,
		Fingerprint: "fp", TicketID: id, Result: []byte(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	tk := ticket.Ticket{ID: id, Tenant: "tenant-a", UserID: "user-a", Title: "Printer", Priority: "normal", CreatedAt: now, OperationKey: key, RequestID: "r-" + id}
	out := &delivery.Record{State: delivery.Queued, Destination: webhook.Name, Key: delivery.Key(key, id), Since: now, Version: 1}
	if existing, taken, err := store.Create(context.Background(), rec, tk, out); err != nil || taken {
		t.Fatalf("create: %v %v", existing, err)
	}
	waitFor(t, "the record twice", func() bool { c, _ := iv.snapshot(); return len(c) >= 2 })
	calls, _ := iv.snapshot()
	if fmt.Sprint(calls[:2]) != fmt.Sprintf("[[ticket#%s] [ticket#%s]]", id, id) {
		t.Fatalf("invocations %v: only the ticket, twice", calls)
	}
	d, err := store.Delivery(context.Background(), id)
	if err != nil || d == nil || d.State != delivery.Delivered {
		t.Fatalf("delivery %+v, %v; want delivered", d, err)
	}
	if n := hd.Counts().CreateRequests; n != 1 {
		t.Fatalf("%d create requests at the helpdesk, want 1", n)
	}
}

// TestScheduleInvokesWithAScheduledEvent: the deliver function's handler
// takes the schedule's event for a sweep.
func TestScheduleInvokesWithAScheduledEvent(t *testing.T) {
	ev, _ := json.Marshal(mapping.ScheduledEvent(time.Now(), "us-east-1"))
	var sweeps int
	h := stream.New(sweepCounter{&sweeps}, nil)
	if _, err := h.Handle(context.Background(), ev); err != nil || sweeps != 1 {
		t.Fatalf("Handle(scheduled event) = %v with %d sweeps", err, sweeps)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var mu sync.Mutex
	n := 0
	s := &mapping.Schedule{Every: 20 * time.Millisecond, Region: "us-east-1", Handler: func(_ context.Context, raw json.RawMessage) (any, error) {
		var e events.EventBridgeEvent
		if err := json.Unmarshal(raw, &e); err != nil || e.DetailType != "Scheduled Event" || e.Source != "aws.events" {
			t.Errorf("scheduled event %s: %v", raw, err)
		}
		mu.Lock()
		n++
		mu.Unlock()
		return nil, nil
	}}
	_ = s.Run(ctx)
	mu.Lock()
	defer mu.Unlock()
	if n < 3 {
		t.Fatalf("%d scheduled invocations in 200 ms at every 20 ms", n)
	}
}

type sweepCounter struct{ n *int }

func (s sweepCounter) Handle(context.Context, string) (delivery.Report, error) {
	return delivery.Report{}, nil
}
func (s sweepCounter) Sweep(context.Context) (delivery.SweepReport, error) {
	*s.n++
	return delivery.SweepReport{}, nil
}
