package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/rie"
	"github.com/oncecall/oncecall/internal/stream"
	"github.com/oncecall/oncecall/internal/testing/samtest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// update rewrites the stream events of events/deliver from what the store
// writes: go test ./functions/deliver -run TestSampleEventsAreTheStoresWrites -update
var update = flag.Bool("update", false, "rewrite events/deliver's stream events from the store's writes")

const (
	eventsDir     = "../../events/deliver"
	testTable     = "oncecall-Table-TEST"
	streamARN     = "arn:aws:dynamodb:eu-west-1:123456789012:table/" + testTable + "/stream/2026-01-01T00:00:00.000"
	destSecretARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:oncecall-DestinationSecret-AbCdEf"
	helpdeskToken = "helpdesk-token-for-tests-7f3a9c"
	invokeTimeout = 2 * time.Minute
)

// manifest is events/deliver/expected.json.
type manifest struct {
	About string `json:"about"`
	// Ticket is the ticket the stream events carry, as the callback
	// creates it (queued for the webhook destination).
	Ticket struct {
		ID          string   `json:"id"`
		UserID      string   `json:"user_id"`
		Tenant      string   `json:"tenant_id"`
		RequestID   string   `json:"request_id"`
		Title       string   `json:"title"`
		Description string   `json:"description"`
		Priority    string   `json:"priority"`
		Tags        []string `json:"tags"`
		CreatedAt   string   `json:"created_at"`
		Destination string   `json:"destination"`
		// SequenceNumber is the stream record's, the id a partial batch
		// failure names.
		SequenceNumber string `json:"sequence_number"`
	} `json:"ticket"`
	Events []struct {
		Event string `json:"event"`
		Row   string `json:"row"`
		// DuplicateOf names the event this one repeats record for record.
		DuplicateOf string `json:"duplicate_of,omitempty"`
		// Answer is a subset the function's answer must contain.
		Answer map[string]any `json:"answer"`
		// Delivery is the ticket's delivery state afterwards;
		// HelpdeskCreates the create requests the helpdesk has received
		// in all.
		Delivery        string `json:"delivery,omitempty"`
		HelpdeskCreates *int   `json:"helpdesk_creates,omitempty"`
	} `json:"events"`
}

func loadManifest(t *testing.T) manifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(eventsDir, "expected.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m manifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("expected.json: %v", err)
	}
	return m
}

func readEvent(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(eventsDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sampleTicket writes the manifest's ticket, created at created, into
// store the way the callback does (one transaction: the operation and the
// ticket, queued), and returns the ticket item as the store holds it
// afterwards: the stream record's new image.
func sampleTicket(t *testing.T, m manifest, client *dynamodb.Client, created time.Time) map[string]types.AttributeValue {
	t.Helper()
	mt := m.Ticket
	// As internal/callback's handler makes them: the arguments as
	// create_ticket acts on them, the key and the ticket from those.
	raw := map[string]any{"title": mt.Title, "description": mt.Description, "priority": mt.Priority}
	var tags []any
	for _, tag := range mt.Tags {
		tags = append(tags, tag)
	}
	raw["tags"] = tags
	args, v := ticket.Create.Normalize(raw)
	if len(v) > 0 {
		t.Fatalf("the manifest's ticket is not valid create_ticket arguments: %v", v)
	}
	key, err := idempotency.Derive(idempotency.PolicyArguments, idempotency.Operation{Tenant: mt.Tenant, RequestID: mt.RequestID, Function: ticket.CreateName, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	tk := ticket.FromArguments(args)
	tk.ID, tk.Tenant, tk.UserID, tk.CreatedAt = mt.ID, mt.Tenant, mt.UserID, created
	tk.OperationKey, tk.RequestID = key.ID, mt.RequestID
	result, _ := json.Marshal(map[string]any{"status": "created", "ticket_id": mt.ID})
	rec := idempotency.Record{
		Key: key.ID, UserID: mt.UserID, Tenant: mt.Tenant, Function: ticket.CreateName, State: idempotency.Completed,
		Fingerprint: key.Fingerprint, TicketID: mt.ID, Result: result, CreatedAt: created, ExpiresAt: created.Add(idempotency.DefaultRetention),
	}
	// As internal/callback's queued builds it.
	out := &delivery.Record{
		State: delivery.Queued, Destination: mt.Destination, Key: delivery.Key(key.ID, mt.ID), Since: created, Version: 1,
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	store := dynamo.New(client, testTable, dynamo.WithClock(func() time.Time { return created }))
	if existing, taken, err := store.Create(ctx, rec, tk, out); err != nil || taken {
		t.Fatalf("create the sample ticket: %v %v", existing, err)
	}
	return getItem(t, client, "ticket#"+mt.ID)
}

func getItem(t *testing.T, client *dynamodb.Client, pk string) map[string]types.AttributeValue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(testTable), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}},
	})
	if err != nil || len(out.Item) == 0 {
		t.Fatalf("read %s: %v", pk, err)
	}
	return out.Item
}

// createdAt is the manifest ticket's creation time, the time of the
// sample stream records.
func createdAt(t *testing.T, m manifest) time.Time {
	t.Helper()
	c, err := time.Parse(time.RFC3339, m.Ticket.CreatedAt)
	if err != nil || !c.Equal(c.Truncate(time.Second)) {
		t.Fatalf("created_at %q: a whole second in RFC 3339", m.Ticket.CreatedAt)
	}
	return c
}

// moved is a sample stream event with its record moved from the time it
// was made (from) to to: a ticket created when the file was written is
// past any DESTINATION_MAX_AGE by the time the test runs, so the player
// moves its times, as the callback's player carries a created ticket id
// into the events that read it. Every time the record holds is replaced:
// the creation time (created_at, and lk_sort in the index's fixed-width
// form), the delivery's since (unix ms) and the record's approximate
// creation (unix s).
func moved(b []byte, from, to time.Time) []byte {
	from, to = from.UTC(), to.UTC()
	return []byte(strings.NewReplacer(
		`"`+from.Format(time.RFC3339Nano)+`"`, `"`+to.Format(time.RFC3339Nano)+`"`,
		`"`+from.Format("2006-01-02T15:04:05.000000000Z")+`"`, `"`+to.Format("2006-01-02T15:04:05.000000000Z")+`"`,
		fmt.Sprintf(`"%d"`, from.UnixMilli()), fmt.Sprintf(`"%d"`, to.UnixMilli()),
		fmt.Sprintf(`: %d,`, from.Unix()), fmt.Sprintf(`: %d,`, to.Unix()),
	).Replace(string(b)))
}

// streamBatch is the event Lambda sends for item's INSERT.
func streamBatch(t *testing.T, seq string, at time.Time, item map[string]types.AttributeValue) []byte {
	t.Helper()
	rec, err := samtest.StreamRecord("INSERT", seq, streamARN, at, item)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.MarshalIndent(events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{rec}}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestSampleEventsAreTheStoresWrites: the stream events in events/deliver
// are, byte for byte, the records the table's stream gives Lambda for the
// manifest's ticket as internal/dynamo writes it; the duplicate is the same
// record again; the scheduled event is EventBridge's. -update rewrites the
// stream events.
func TestSampleEventsAreTheStoresWrites(t *testing.T) {
	m := loadManifest(t)
	_, client := samtest.StartStore(t, testTable)
	created := createdAt(t, m)
	item := sampleTicket(t, m, client, created)
	want := streamBatch(t, m.Ticket.SequenceNumber, created, item)
	for _, e := range m.Events {
		if !strings.HasPrefix(e.Event, "stream_") {
			continue
		}
		path := filepath.Join(eventsDir, e.Event)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got := readEvent(t, e.Event); !bytes.Equal(got, want) {
			t.Errorf("%s is not the record the store's write makes; run: go test ./functions/deliver -run %s -update\ngot\n%s\nwant\n%s", e.Event, t.Name(), got, want)
		}
	}
	var sched events.EventBridgeEvent
	if err := json.Unmarshal(readEvent(t, "scheduled.json"), &sched); err != nil {
		t.Fatal(err)
	}
	if sched.Source != "aws.events" || sched.DetailType != "Scheduled Event" || len(sched.Resources) != 1 {
		t.Errorf("scheduled.json is not an EventBridge scheduled event: %+v", sched)
	}
}

// deployedEnv is DeliverFunction's environment on AWS: template.yaml's
// variables for a webhook destination, with the references CloudFormation
// fills in, and what the Lambda service sets. One value is changed: the
// template accepts only an https DestinationUrl, and the local helpdesk
// speaks http on loopback.
func deployedEnv(t *testing.T, a *samtest.AWS, hd *helpdesk.Server) map[string]string {
	t.Helper()
	s := deploy(t, webhook)
	env := map[string]string{}
	for k, v := range s.Env("DeliverFunction") {
		env[k] = samtest.Resolve(t, v, map[string]string{"ref:Table": testTable, "ref:DestinationSecret": destSecretARN})
	}
	if env[config.EnvDestinationURL] != webhookURL {
		t.Fatalf("%s = %q", config.EnvDestinationURL, env[config.EnvDestinationURL])
	}
	env[config.EnvDestinationURL] = hd.WebhookURL()
	maps.Copy(env, s.LambdaEnv("DeliverFunction"))
	maps.Copy(env, a.Env())
	return env
}

func startHelpdesk(t *testing.T) *helpdesk.Server {
	t.Helper()
	// The strictest helpdesk: it neither deduplicates nor can be looked up,
	// so a second create would be a second ticket.
	hd, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{Token: helpdeskToken})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hd.Close() })
	return hd
}

func invoke(t *testing.T, e *rie.Emulator, id string, ev []byte) rie.Invocation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), invokeTimeout)
	defer cancel()
	inv, err := e.Invoke(ctx, id, ev)
	if err != nil {
		t.Fatalf("invoke %s: %v\noutput: %q", id, err, e.Output())
	}
	if inv.Status != http.StatusOK {
		t.Fatalf("the emulator answered %d: %s\noutput: %q", inv.Status, inv.Body, inv.Output)
	}
	return inv
}

// batchAnswer is the answer to a stream batch.
func batchAnswer(t *testing.T, inv rie.Invocation) events.DynamoDBEventResponse {
	t.Helper()
	var resp events.DynamoDBEventResponse
	dec := json.NewDecoder(bytes.NewReader(inv.Body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&resp); err != nil {
		t.Fatalf("not a partial batch response: %v: %s\noutput %q", err, inv.Body, inv.Output)
	}
	return resp
}

// contains reports whether got holds every member of want (recursively;
// an empty list or null in want means "none").
func contains(got, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			if !contains(g[k], v) {
				return false
			}
		}
		return true
	case []any:
		g, _ := got.([]any)
		if len(w) == 0 {
			return len(g) == 0
		}
		if len(g) != len(w) {
			return false
		}
		for i := range w {
			if !contains(g[i], w[i]) {
				return false
			}
		}
		return true
	case nil:
		return got == nil
	}
	return fmt.Sprint(got) == fmt.Sprint(want)
}

// lines returns the output's JSON lines whose message is msg.
func lines(out []string, msg string) []map[string]any {
	var found []map[string]any
	for _, l := range out {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["message"] == msg {
			found = append(found, m)
		}
	}
	return found
}

// emf returns the output's EMF lines.
func emf(out []string) []map[string]any {
	var found []map[string]any
	for _, l := range out {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["_aws"] != nil {
			found = append(found, m)
		}
	}
	return found
}

func deliveryOf(t *testing.T, client *dynamodb.Client, id string) *delivery.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := dynamo.New(client, testTable).Delivery(ctx, id)
	if err != nil || r == nil {
		t.Fatalf("delivery of %s: %v %v", id, r, err)
	}
	return r
}

// TestEventsOnTheDeployedConfiguration plays events/deliver through the
// real bootstrap under the emulator, configured as template.yaml deploys it
// (the credentials from Secrets Manager, the table by name, AWS's
// endpoints), against the embedded store and the local helpdesk: the
// queued ticket is delivered once, the stream's duplicate of its record
// creates nothing more, the schedule runs a sweep. Then a retry: a ticket
// whose first attempt the helpdesk answers 429 is delivered by the next
// sweep. Everything the function sent towards AWS is the one secret read
// and DynamoDB requests DeliverRole allows.
func TestEventsOnTheDeployedConfiguration(t *testing.T) {
	m := loadManifest(t)
	db, client := samtest.StartStore(t, testTable)
	now := time.Now().UTC().Truncate(time.Second)
	item := sampleTicket(t, m, client, now)
	hd := startHelpdesk(t)
	a := samtest.NewAWS(t, db.URL, map[string]string{destSecretARN: `{"token":"` + helpdeskToken + `"}`})
	e := bins.StartEmulator(t, deployedEnv(t, a, hd))

	for i, ev := range m.Events {
		event := readEvent(t, ev.Event)
		if strings.HasPrefix(ev.Event, "stream_") {
			event = moved(event, createdAt(t, m), now)
			// Moved, it is still exactly the store's write, made now.
			if want := streamBatch(t, m.Ticket.SequenceNumber, now, item); !bytes.Equal(event, want) {
				t.Fatalf("%s moved to %s is not the store's write\ngot\n%s\nwant\n%s", ev.Event, now, event, want)
			}
		}
		inv := invoke(t, e, fmt.Sprintf("ev-%02d", i), event)
		var got any
		if err := json.Unmarshal(inv.Body, &got); err != nil {
			t.Fatalf("%s: the answer is not JSON: %s", ev.Event, inv.Body)
		}
		if strings.HasPrefix(ev.Event, "stream_") {
			batchAnswer(t, inv)
		}
		if !contains(got, ev.Answer) {
			t.Errorf("%s: answer %s, want %v", ev.Event, inv.Body, ev.Answer)
		}
		if ev.DuplicateOf != "" && !bytes.Equal(readEvent(t, ev.Event), readEvent(t, ev.DuplicateOf)) {
			t.Errorf("%s is not the record of %s again", ev.Event, ev.DuplicateOf)
		}
		if ev.Delivery != "" {
			if r := deliveryOf(t, client, m.Ticket.ID); string(r.State) != ev.Delivery {
				t.Errorf("%s: delivery %s, want %s", ev.Event, r.State, ev.Delivery)
			}
		}
		if ev.HelpdeskCreates != nil {
			if n := hd.Counts().CreateRequests; n != *ev.HelpdeskCreates {
				t.Errorf("%s: the helpdesk received %d creates, want %d", ev.Event, n, *ev.HelpdeskCreates)
			}
		}
		switch ev.Event {
		case "stream_insert_queued.json":
			// One line per attempt, one EMF line per attempt.
			d := lines(inv.Output, "delivery")
			if len(d) != 1 || d[0]["ticket_id"] != m.Ticket.ID || d[0]["outcome"] != delivery.OutcomeDelivered || d[0]["state"] != string(delivery.Delivered) {
				t.Errorf("delivery log lines %v", d)
			}
			if ms := emf(inv.Output); len(ms) != 1 || ms[0][delivery.OutcomeDelivered] != float64(1) || ms[0]["FunctionName"] != "oncecall-DeliverFunction-TEST" {
				t.Errorf("EMF lines %v", ms)
			}
		case "scheduled.json":
			// The sweep measured the backlog.
			if ms := emf(inv.Output); len(ms) != 1 || ms[0]["uncertain_backlog"] != float64(0) || ms[0]["oldest_queued_age"] != float64(0) {
				t.Errorf("sweep EMF lines %v", ms)
			}
		}
	}
	// The helpdesk holds the ticket once, sent with its key and the token.
	tickets := hd.TicketsByExternalID(m.Ticket.ID)
	r := deliveryOf(t, client, m.Ticket.ID)
	if len(tickets) != 1 || tickets[0].IdempotencyKey != r.Key || tickets[0].Title != m.Ticket.Title {
		t.Fatalf("the helpdesk holds %+v for the ticket (key %s)", tickets, r.Key)
	}
	if r.Receipt.ID != fmt.Sprint(tickets[0].ID) || r.Attempts != 1 {
		t.Errorf("the store records %+v", r)
	}

	// A retry: the helpdesk is rate limited for the next create, so the
	// stream's attempt schedules a retry (into the attention index), and
	// the next sweep, once it is due, delivers it.
	second := m
	second.Ticket.ID, second.Ticket.RequestID, second.Ticket.Title = "7a1e5c9d-2b4f-4e68-9a0c-3d5f7b9e1c2a", "request-deliver-2", "Printer on fire"
	now = time.Now().UTC().Truncate(time.Second)
	item = sampleTicket(t, second, client, now)
	if err := hd.Inject(helpdesk.Fault{Kind: helpdesk.RateLimit, RetryAfter: "1"}); err != nil {
		t.Fatal(err)
	}
	inv := invoke(t, e, "retry-stream", streamBatch(t, "4421584500000000017450439092", now, item))
	if resp := batchAnswer(t, inv); len(resp.BatchItemFailures) != 0 {
		t.Errorf("a rate limited attempt failed the record: %s", inv.Body)
	}
	r = deliveryOf(t, client, second.Ticket.ID)
	if r.State != delivery.Queued || r.NextAt.IsZero() || r.LastStatus != http.StatusTooManyRequests {
		t.Fatalf("after a 429 the delivery is %+v, want queued with a retry", r)
	}
	time.Sleep(time.Until(r.NextAt) + 100*time.Millisecond)
	inv = invoke(t, e, "retry-sweep", readEvent(t, "scheduled.json"))
	var sweep stream.SweepResult
	if err := json.Unmarshal(inv.Body, &sweep); err != nil {
		t.Fatalf("sweep answer %s: %v", inv.Body, err)
	}
	if sweep.Due != 1 || sweep.Outcomes[delivery.OutcomeDelivered] != 1 || sweep.Backlog != (stream.Backlog{}) {
		t.Errorf("sweep answered %s, want the due retry delivered and nothing left", inv.Body)
	}
	if n := len(hd.TicketsByExternalID(second.Ticket.ID)); n != 1 {
		t.Errorf("the helpdesk holds %d tickets for the retried one", n)
	}
	if r := deliveryOf(t, client, second.Ticket.ID); r.State != delivery.Delivered || r.Attempts != 2 {
		t.Errorf("after the sweep the delivery is %+v", r)
	}

	// A record of a ticket the table no longer holds (deleted after its
	// write): the refused lease comes back without an item, the worker
	// reads it to know why, and nothing is sent.
	gone := maps.Clone(item)
	gone["pk"] = &types.AttributeValueMemberS{Value: "ticket#00000000-0000-4000-8000-00000000dead"}
	inv = invoke(t, e, "gone", streamBatch(t, "4421584500000000017450439093", now, gone))
	if resp := batchAnswer(t, inv); len(resp.BatchItemFailures) != 0 || hd.Counts().CreateRequests != 3 {
		t.Errorf("a record of a missing ticket: %s, %+v", inv.Body, hd.Counts())
	}

	// What went towards AWS: the secret once, at the cold start; then only
	// DynamoDB, on the stack's table, within DeliverRole's grants.
	role := samtest.Grants(samtest.Allowed(t, deploy(t, webhook), "DeliverRole"))
	used := map[samtest.Grant]bool{}
	secretReads := 0
	for _, c := range a.Calls() {
		switch {
		case c.Target == samtest.GetSecretValue:
			secretReads++
			if !bytes.Contains(c.Body, []byte(destSecretARN)) {
				t.Errorf("read another secret: %s", c.Body)
			}
		case strings.HasPrefix(c.Target, samtest.DynamoPrefix):
			for _, g := range samtest.DynamoGrants(t, c, map[string]string{testTable: "getatt:Table.Arn"}) {
				r, ok := samtest.Permits(role, g)
				used[r] = true
				if !ok {
					t.Errorf("the worker sent %s, which DeliverRole does not allow: denied on AWS", g)
				}
			}
		default:
			t.Errorf("the worker sent %q, which is neither the secret read nor DynamoDB", c.Target)
		}
	}
	if secretReads != 1 {
		t.Errorf("%d secret reads, want 1 (once per cold start)", secretReads)
	}
	// And every grant on the table was needed by these events: none is
	// there for nothing.
	for g := range role {
		if strings.HasPrefix(g.Action, "dynamodb:") && strings.HasPrefix(g.Resource, "getatt:Table.Arn") && !used[g] {
			t.Errorf("DeliverRole allows %s, which these events never needed", g)
		}
	}
	// The credentials never show.
	for _, l := range e.Output() {
		if strings.Contains(l, helpdeskToken) {
			t.Errorf("the output shows the token: %s", l)
		}
	}
}

// TestStoreUnreachable: when the store cannot be reached, the record is
// answered as a batch item failure (so the mapping retries it, and nothing
// was sent to the helpdesk), and a sweep fails as an invocation error (so
// the schedule's invocation counts as failed).
func TestStoreUnreachable(t *testing.T) {
	m := loadManifest(t)
	hd := startHelpdesk(t)
	// DynamoDB requests go to a port nothing listens on.
	a := samtest.NewAWS(t, "http://127.0.0.1:1", map[string]string{destSecretARN: helpdeskToken})
	e := bins.StartEmulator(t, deployedEnv(t, a, hd))

	inv := invoke(t, e, "unreachable-stream", moved(readEvent(t, "stream_insert_queued.json"), createdAt(t, m), time.Now()))
	resp := batchAnswer(t, inv)
	want := []events.DynamoDBBatchItemFailure{{ItemIdentifier: m.Ticket.SequenceNumber}}
	if !slices.Equal(resp.BatchItemFailures, want) {
		t.Errorf("answer %s, want the record's sequence number as a failure", inv.Body)
	}
	if l := lines(inv.Output, "stream record failed; the event source mapping retries it"); len(l) != 1 || l[0]["ticket_id"] != m.Ticket.ID {
		t.Errorf("failure log lines %v", l)
	}
	inv = invoke(t, e, "unreachable-sweep", readEvent(t, "scheduled.json"))
	var fnErr struct{ ErrorMessage, ErrorType string }
	if err := json.Unmarshal(inv.Body, &fnErr); err != nil || fnErr.ErrorMessage == "" {
		t.Errorf("a sweep without its store answered %s, want a function error", inv.Body)
	}
	if c := hd.Counts(); c.CreateRequests != 0 || c.LookupRequests != 0 {
		t.Errorf("the helpdesk was called without a lease: %+v", c)
	}
}
