package stream_test

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
	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/webhook"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/stream"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/ticket"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(dynamotest.Main(m)) }

type fixture struct {
	env   *dynamotest.Env
	store *dynamo.Store
	hd    *helpdesk.Server
	w     *delivery.Worker
	h     *stream.Handler
}

// newFixture is the worker function's handler over a fresh table of the
// embedded store, delivering to the local helpdesk through caps.
func newFixture(t *testing.T, caps delivery.Capabilities) *fixture {
	t.Helper()
	env := dynamotest.New(t)
	f := &fixture{env: env, store: dynamo.New(env.Client, env.Table)}
	if _, err := localdb.SeedDemo(context.Background(), f.store); err != nil {
		t.Fatal(err)
	}
	hd, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{Capabilities: caps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hd.Close() })
	f.hd = hd
	dest, err := webhook.New(hd.WebhookURL(), webhook.Options{Capabilities: caps, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dest.CloseIdleConnections)
	f.w = &delivery.Worker{Store: f.store, Destination: dest, Policy: delivery.DefaultPolicy}
	f.h = stream.New(f.w, nil)
	return f
}

// queue writes a ticket queued for delivery, as the callback does, and
// returns its id.
func (f *fixture) queue(t *testing.T) string {
	t.Helper()
	id, now := ticket.NewID(), time.Now().UTC()
	key := "op-" + id
	rec := idempotency.Record{Key: key, UserID: "user-a", Tenant: "tenant-a", Function: ticket.CreateName,
		State: idempotency.Completed, Fingerprint: "fp", TicketID: id, Result: []byte(`{}`), CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	tk := ticket.Ticket{ID: id, Tenant: "tenant-a", UserID: "user-a", Title: "Printer", Priority: "normal", CreatedAt: now, OperationKey: key, RequestID: "r-" + id}
	out := &delivery.Record{State: delivery.Queued, Destination: webhook.Name, Key: delivery.Key(key, id), Since: now, Version: 1}
	if existing, taken, err := f.store.Create(context.Background(), rec, tk, out); err != nil || taken {
		t.Fatalf("create: %v %v", existing, err)
	}
	return id
}

// record is a stream record of the insert of ticket id, as Lambda sends
// it (the keys are enough for the worker; the image is what the filter
// reads).
func record(id string, seq int) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{
		EventName: "INSERT", EventSource: "aws:dynamodb", EventID: fmt.Sprint("e-", seq),
		Change: events.DynamoDBStreamRecord{
			Keys:           map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("ticket#" + id)},
			NewImage:       map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("ticket#" + id), "dest": events.NewStringAttribute("webhook")},
			SequenceNumber: fmt.Sprint(1000 + seq),
			StreamViewType: "NEW_IMAGE",
		},
	}
}

func (f *fixture) handle(t *testing.T, v any) any {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.h.Handle(context.Background(), raw)
	if err != nil {
		t.Fatalf("Handle: %v", err)
	}
	return out
}

// TestRecordDeliveredTwiceAndRacingTheSweep: the stream brings a ticket's
// record twice in one batch (at-least-once), and again in a second batch
// while the scheduled sweep runs: the helpdesk gets one create.
func TestRecordDeliveredTwiceAndRacingTheSweep(t *testing.T) {
	for _, caps := range []delivery.Capabilities{{}, {DedupWindow: time.Hour, Lookup: true}} {
		f := newFixture(t, caps)
		ids := []string{f.queue(t), f.queue(t), f.queue(t)}
		batch := events.DynamoDBEvent{}
		for i, id := range ids {
			batch.Records = append(batch.Records, record(id, 2*i), record(id, 2*i+1))
		}
		var wg sync.WaitGroup
		answers := make([]any, 2)
		for i := range answers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				answers[i] = f.handle(t, batch)
			}()
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			f.handle(t, map[string]any{"source": "aws.events", "detail-type": "Scheduled Event", "detail": map[string]any{}})
		}()
		wg.Wait()
		for _, a := range answers {
			if r, ok := a.(events.DynamoDBEventResponse); !ok || len(r.BatchItemFailures) != 0 {
				t.Fatalf("batch answered %#v", a)
			}
		}
		for _, id := range ids {
			if n := len(f.hd.TicketsByExternalID(id)); n != 1 {
				t.Fatalf("%+v: %d tickets at the helpdesk for %s", caps, n, id)
			}
			if d, err := f.store.Delivery(context.Background(), id); err != nil || d.State != delivery.Delivered {
				t.Fatalf("%+v: delivery %+v, %v", caps, d, err)
			}
		}
		if c := f.hd.Counts(); c.Creations != len(ids) {
			t.Fatalf("%+v: %d creations for %d tickets", caps, c.Creations, len(ids))
		}
	}
}

// TestFailedRecordIsAPartialBatchFailure: a record whose delivery the
// worker cannot even read (here an item the store holds in a shape oncecall
// never writes) is reported by its sequence number, so the event source
// mapping retries it and, past its retries, sends it to the on-failure
// queue; the batch's other records are delivered and not reported.
func TestFailedRecordIsAPartialBatchFailure(t *testing.T) {
	f := newFixture(t, delivery.Capabilities{DedupWindow: time.Hour})
	ok, broken := f.queue(t), ticket.NewID()
	_, err := f.env.Client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(f.env.Table), Item: map[string]types.AttributeValue{
		dynamo.PartitionKey: &types.AttributeValueMemberS{Value: "ticket#" + broken},
		"kind":              &types.AttributeValueMemberS{Value: "ticket"},
		"delivery":          &types.AttributeValueMemberN{Value: "1"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	out := f.handle(t, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{record(ok, 1), record(broken, 2)}})
	r, isResp := out.(events.DynamoDBEventResponse)
	if !isResp || len(r.BatchItemFailures) != 1 || r.BatchItemFailures[0].ItemIdentifier != "1002" {
		t.Fatalf("answer %#v, want the second record's sequence number only", out)
	}
	if n := len(f.hd.TicketsByExternalID(ok)); n != 1 {
		t.Fatalf("the healthy record: %d tickets", n)
	}
}

func TestUnknownEvent(t *testing.T) {
	f := newFixture(t, delivery.Capabilities{})
	if _, err := f.h.Handle(context.Background(), json.RawMessage(`{"hello":"world"}`)); err == nil {
		t.Fatal("an unknown event was accepted")
	}
}

// TestTTLRemoveRecordIsIgnored: a TTL deletion reaches the stream as a
// REMOVE record made by the DynamoDB service. Were it to reach the handler
// (the template's filter keeps it out), it delivers nothing and fails
// nothing, even for a ticket still queued.
func TestTTLRemoveRecordIsIgnored(t *testing.T) {
	f := newFixture(t, delivery.Capabilities{})
	id := f.queue(t)
	rec := record(id, 1)
	rec.EventName = "REMOVE"
	rec.Change.NewImage = nil
	rec.Change.OldImage = map[string]events.DynamoDBAttributeValue{"pk": events.NewStringAttribute("ticket#" + id)}
	rec.UserIdentity = &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}
	out := f.handle(t, events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}})
	if r, ok := out.(events.DynamoDBEventResponse); !ok || len(r.BatchItemFailures) != 0 {
		t.Fatalf("answer %+v", out)
	}
	if n := f.hd.Counts().CreateRequests; n != 0 {
		t.Fatalf("a REMOVE record sent %d creates", n)
	}
	if d, err := f.store.Delivery(context.Background(), id); err != nil || d == nil || d.State != delivery.Queued || d.Attempts != 0 {
		t.Fatalf("delivery after a REMOVE record: %+v, %v; want queued, untouched", d, err)
	}
}
