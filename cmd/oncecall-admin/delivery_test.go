package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/oncecall/oncecall/internal/app"
	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/webhook"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/testing/suitetest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// deskPolicy keeps a worker's requests short; every test attempt ends in
// a final state at once (the webhook neither deduplicates nor can be
// looked up).
var deskPolicy = delivery.Policy{Timeout: 2 * time.Second, MaxAttempts: 8, MaxAge: 24 * time.Hour,
	BaseBackoff: time.Second, MaxBackoff: time.Minute}

// desk is a rig with deliveries, as make run DESTINATION=webhook runs them:
// the real callback handler queues every ticket for a webhook, the local
// helpdesk serves it (no deduplication, no lookup), and the real worker
// delivers over HTTP with the real adapter. The tests make its attempts
// themselves, where the local runner would.
type desk struct {
	*rig
	store *dynamo.Store
	hd    *helpdesk.Server
	dest  *webhook.Destination
	w     *delivery.Worker
	srv   *httptest.Server
	nonce string
}

func newDesk(t *testing.T) *desk {
	t.Helper()
	r := newRig(t)
	r.vars["ONCECALL_OPERATOR"] = "alice"
	store := dynamo.New(r.env.Client, r.env.Table)
	hd, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hd.Close() })
	dest, err := webhook.New(hd.WebhookURL(), webhook.Options{Timeout: deskPolicy.Timeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dest.CloseIdleConnections)
	cfg := config.Defaults
	cfg.Table, cfg.Endpoint, cfg.HookKey = r.env.Table, r.env.Endpoint, localdb.DemoHookKey
	h, err := app.Handler(cfg, store, slog.New(slog.NewJSONHandler(io.Discard, nil)), &delivery.Outbox{Name: webhook.Name})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(httpapi.New(h, httpapi.Options{}))
	t.Cleanup(func() { srv.Client().CloseIdleConnections(); srv.Close() })
	n, err := nonce.Generate(localdb.DemoHookKey, nonce.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return &desk{rig: r, store: store, hd: hd, dest: dest, srv: srv, nonce: n,
		w: &delivery.Worker{Store: store, Destination: dest, Policy: deskPolicy}}
}

// call sends body to the callback and returns its decoded answer.
func (d *desk) call(body string) map[string]any {
	d.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, d.srv.URL+httpapi.CallbackPath, strings.NewReader(body))
	req.Header.Set(protocol.NonceHeader, d.nonce)
	resp, err := d.srv.Client().Do(req)
	if err != nil {
		d.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil || resp.StatusCode != http.StatusOK {
		d.t.Fatalf("callback answered %d %s", resp.StatusCode, raw)
	}
	return out
}

func createBody(user, requestID, title string) string {
	return `{"type":"tool_call","function":{"name":"create_ticket","content":{"title":` + strconv.Quote(title) + `}},` +
		`"context":{"externalUserId":"` + user + `","metadata":{"request_id":"` + requestID + `"}}}`
}

// create calls create_ticket and returns the ticket id.
func (d *desk) create(user, requestID, title string) string {
	d.t.Helper()
	a := d.call(createBody(user, requestID, title))
	id, _ := a["ticket_id"].(string)
	if a["status"] != "created" || a["deduplicated"] != false || viewState(a) != "queued" {
		d.t.Fatalf("create_ticket answered %v", a)
	}
	return id
}

func (d *desk) getTicket(user, id string) map[string]any {
	d.t.Helper()
	a := d.call(`{"function":{"name":"get_ticket","content":{"ticket_id":"` + id + `"}},"context":{"externalUserId":"` + user + `"}}`)
	tk, _ := a["ticket"].(map[string]any)
	if a["status"] != "found" || tk == nil {
		d.t.Fatalf("get_ticket answered %v", a)
	}
	return tk
}

// viewState is the delivery state an answer (or its ticket) tells.
func viewState(a map[string]any) string {
	v, _ := a["delivery"].(map[string]any)
	s, _ := v["state"].(string)
	return s
}

func viewField(a map[string]any, name string) string {
	v, _ := a["delivery"].(map[string]any)
	s, _ := v[name].(string)
	return s
}

// attempt makes one delivery attempt of ticket id, with fault (when not
// nil) queued at the helpdesk first.
func (d *desk) attempt(id string, fault *helpdesk.Fault) delivery.Report {
	d.t.Helper()
	if fault != nil {
		if err := d.hd.Inject(*fault); err != nil {
			d.t.Fatal(err)
		}
	}
	rep, err := d.w.Deliver(context.Background(), id)
	if err != nil {
		d.t.Fatalf("Deliver: %v", err)
	}
	return rep
}

func (d *desk) record(id string) delivery.Record {
	d.t.Helper()
	r, err := d.store.Delivery(context.Background(), id)
	if err != nil || r == nil {
		d.t.Fatalf("Delivery(%s) = %v, %v", id, r, err)
	}
	return *r
}

// atHelpdesk counts the helpdesk's tickets of oncecall ticket id.
func (d *desk) atHelpdesk(id string) int { return len(d.hd.TicketsByExternalID(id)) }

// findOut is find -json's output.
type findOut struct {
	Matches []struct {
		Ticket    *ticketView    `json:"ticket"`
		Operation *operationView `json:"operation"`
		Delivery  *deliveryView  `json:"delivery"`
	} `json:"matches"`
}

func (d *desk) find(args ...string) findOut {
	d.t.Helper()
	var o findOut
	res := d.must(exitOK, append(append([]string{"find"}, args...), "-json")...)
	if err := json.Unmarshal([]byte(res.stdout), &o); err != nil || len(o.Matches) == 0 {
		d.t.Fatalf("find %v: %v\n%s", args, err, res.stdout)
	}
	return o
}

func fault(kind helpdesk.FaultKind, status int, body string) *helpdesk.Fault {
	return &helpdesk.Fault{Kind: kind, Status: status, Body: body}
}

// TestFindShowsTheDelivery: find by each handle shows the delivery of an
// uncertain ticket (state, attempts, last outcome, maybe_sent, key,
// version, what the model is told), and the destination's refusal text
// for a failed one, in the table and in -json.
func TestFindShowsTheDelivery(t *testing.T) {
	d := newDesk(t)
	id := d.create("user-a", "req-find", "Printer on fire")
	if rep := d.attempt(id, fault(helpdesk.FailAfter, 500, "")); rep.State != delivery.Uncertain {
		t.Fatalf("attempt: %+v", rep)
	}
	rec := d.record(id)
	opKey := d.find("-ticket", id).Matches[0].Ticket.OperationKey
	for _, handle := range [][]string{{"-ticket", id}, {"-op", opKey}, {"-tenant", "tenant-a", "-request", "req-find"}} {
		dv := d.find(handle...).Matches[0].Delivery
		if dv == nil || dv.State != "uncertain" || dv.StoredState != "uncertain" || dv.Attempts != 1 || dv.LastCode != "http_500" ||
			dv.LastStatus != 500 || !dv.MaybeSent || dv.IdempotencyKey != rec.Key || dv.Version != rec.Version ||
			dv.Destination != "webhook" || dv.Told.State != delivery.Uncertain || len(dv.Audit) != 0 {
			t.Errorf("find %v: delivery %+v", handle, dv)
		}
	}
	res := d.must(exitOK, "find", "-ticket", id)
	for _, want := range []string{"delivery", "uncertain since", rec.Key, "1; last outcome: http_500 (HTTP 500)",
		"maybe_sent", "may have created it", "version", "model is told", "no operator decision"} {
		if !strings.Contains(res.stdout, want) {
			t.Errorf("find -ticket table lacks %q:\n%s", want, res.stdout)
		}
	}
	// A refusal's words are shown to the operator, quoted.
	refused := d.create("user-c", "req-refused", "Too hot")
	if rep := d.attempt(refused, fault(helpdesk.FailBefore, 422, `{"error":"title is \"hot\"\nrefused"}`)); rep.State != delivery.Failed {
		t.Fatalf("attempt: %+v", rep)
	}
	dv := d.find("-ticket", refused).Matches[0].Delivery
	if dv.State != "failed" || dv.MaybeSent || !strings.Contains(dv.Reason, "hot") {
		t.Errorf("failed delivery %+v", dv)
	}
	if res := d.must(exitOK, "find", "-ticket", refused); !strings.Contains(res.stdout, `reason`) || strings.Contains(res.stdout, "\"\nrefused") {
		t.Errorf("the reason is not shown quoted:\n%s", res.stdout)
	}
	// A live lease is reported in_progress, with its end.
	leased := d.create("user-a", "req-leased", "Leased")
	until := time.Now().Add(time.Minute)
	if _, _, err := d.store.Lease(context.Background(), leased, delivery.Lease{Owner: "w-test", From: time.Now(), Until: until}); err != nil {
		t.Fatal(err)
	}
	dv = d.find("-ticket", leased).Matches[0].Delivery
	if dv.State != "in_progress" || dv.StoredState != "queued" || dv.LeaseUntil == "" {
		t.Errorf("leased delivery %+v", dv)
	}
	// A ticket created without a destination has none.
	plain := created(t, d.env, localdb.DemoUsers[0], strings.Repeat("e", 64), "req-plain", "", time.Now())
	if dv := d.find("-ticket", plain.ID).Matches[0].Delivery; dv != nil {
		t.Errorf("a ticket without a destination shows %+v", dv)
	}
	if res := d.must(exitOK, "find", "-ticket", plain.ID); !strings.Contains(res.stdout, "no destination was configured") {
		t.Errorf("find of a ticket without a delivery:\n%s", res.stdout)
	}
}

// listOut is delivery list -json's output.
type listOut struct {
	State      string       `json:"state"`
	Deliveries []listedView `json:"deliveries"`
	Next       string       `json:"next"`
}

// TestDeliveryList: oldest first, per tenant, -older-than, pages joined
// by -after, and never a scan.
func TestDeliveryList(t *testing.T) {
	d := newDesk(t)
	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var clock time.Time
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	set := func(t time.Time) { mu.Lock(); clock = t; mu.Unlock() }
	d.w.Now = now
	d.clock = func() time.Time { return base.Add(time.Hour) }
	var all, tenantA []string // uncertain, oldest first
	users := []string{"user-a", "user-c", "user-a", "user-b", "user-c", "user-a"}
	for i, u := range users {
		id := d.create(u, "req-list-"+strconv.Itoa(i), "List "+strconv.Itoa(i))
		// Entered uncertain at base+50m, +40m, ... : the last created is the oldest.
		set(base.Add(time.Duration(50-10*i) * time.Minute))
		if rep := d.attempt(id, fault(helpdesk.FailBefore, 503, "")); rep.State != delivery.Uncertain {
			t.Fatalf("attempt: %+v", rep)
		}
		all = append([]string{id}, all...)
		if u != "user-c" {
			tenantA = append([]string{id}, tenantA...)
		}
	}
	set(base)
	failed := d.create("user-a", "req-list-failed", "Failed")
	d.attempt(failed, fault(helpdesk.FailBefore, 429, ""))
	retry := d.record(failed) // 429: a retry is scheduled, so it is listed as queued
	// Listed as queued too, since it entered the state: the sweep takes it
	// up should the stream not bring it.
	first := d.create("user-a", "req-list-first", "First attempt pending")

	proxy := dynamotest.NewProxy(t, d.env.Endpoint)
	d.vars["DYNAMODB_ENDPOINT"] = proxy.URL
	list := func(args ...string) []string {
		t.Helper()
		var got []string
		after := ""
		for pages := 0; pages < 20; pages++ {
			a := append([]string{"delivery", "list", "-json"}, args...)
			if after != "" {
				a = append(a, "-after", after)
			}
			var o listOut
			if err := json.Unmarshal([]byte(d.must(exitOK, a...).stdout), &o); err != nil {
				t.Fatal(err)
			}
			for _, l := range o.Deliveries {
				got = append(got, l.TicketID)
			}
			if after = o.Next; after == "" {
				return got
			}
		}
		t.Fatal("no last page")
		return nil
	}
	d.pageSize = 2
	if got := list("-state", "uncertain", "-limit", "4"); !slices.Equal(got, all) {
		t.Errorf("uncertain: %v, want %v", got, all)
	}
	if got := list("-state", "uncertain", "-tenant", "tenant-a", "-limit", "2"); !slices.Equal(got, tenantA) {
		t.Errorf("tenant-a: %v, want %v", got, tenantA)
	}
	// The tool's clock is base+1h: older than 35m are those that entered by base+25m.
	if got := list("-state", "uncertain", "-older-than", "35m"); !slices.Equal(got, all[:3]) {
		t.Errorf("older than 35m: %v, want %v", got, all[:3])
	}
	if got := list("-state", "queued"); !slices.Equal(got, []string{failed, first}) || retry.State != delivery.Queued {
		t.Errorf("queued: %v (%+v), want the scheduled retry and the ticket awaiting its first attempt", got, retry)
	}
	if got := list("-state", "failed"); len(got) != 0 {
		t.Errorf("failed: %v", got)
	}
	if proxy.Seen("Scan") != 0 || proxy.Seen("Query") == 0 {
		t.Errorf("%d Scan and %d Query requests: a listing queries, never scans", proxy.Seen("Scan"), proxy.Seen("Query"))
	}
	// The table: one row per delivery, oldest first, and where to go on.
	res := d.must(exitOK, "delivery", "list", "-state", "uncertain", "-limit", "2")
	lines := strings.Split(strings.TrimSpace(res.stdout), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "TICKET") || !strings.HasPrefix(lines[1], all[0]) ||
		!strings.Contains(lines[1], "req-list-5") || !strings.Contains(lines[1], "http_503/503") || !strings.Contains(lines[3], "more: add -after ") {
		t.Errorf("delivery list table:\n%s", res.stdout)
	}
	// What the tool says it lists is what it listed above: first attempts
	// and retries alike, in its footer, its flag's help and its summary.
	if res := d.must(exitOK, "delivery", "list", "-state", "queued"); !strings.Contains(res.stdout, "(queued lists every ticket waiting for an attempt, its first included)") {
		t.Errorf("delivery list -state queued does not say what it lists:\n%s", res.stdout)
	}
	if res := d.must(exitOK, "delivery", "list", "-h"); !strings.Contains(res.stdout, "queued: tickets waiting for an attempt, the first or a retry") ||
		!strings.Contains(res.stdout, "waiting for an attempt (queued)") || strings.Contains(res.stdout, "retries only") {
		t.Errorf("delivery list -h does not say what -state queued lists:\n%s", res.stdout)
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"delivery", "list"}, "-state is required"},
		{[]string{"delivery", "list", "-state", "delivered"}, "list uncertain, failed or queued"},
		{[]string{"delivery", "list", "-state", "uncertain", "-limit", "0"}, "-limit 0 is outside"},
		{[]string{"delivery", "list", "-state", "uncertain", "-older-than", "-1h"}, "negative"},
		{[]string{"delivery", "list", "-state", "uncertain", "-after", "bogus"}, "not a cursor of this listing"},
		{[]string{"delivery", "list", "-state", "uncertain", "-tenant", " x"}, "space"},
	} {
		if res := d.run(tc.args...); res.code != exitUsage || !strings.Contains(res.stderr, tc.says) {
			t.Errorf("%v: exit %d %q, want %d saying %q", tc.args, res.code, res.stderr, exitUsage, tc.says)
		}
	}
}

// settleOut is delivery settle -json's output.
type settleOut struct {
	Settled  bool          `json:"settled"`
	TicketID string        `json:"ticket_id"`
	As       string        `json:"as"`
	From     string        `json:"from"`
	To       string        `json:"to"`
	Delivery *deliveryView `json:"delivery"`
}

func (d *desk) settle(args ...string) (settleOut, changeLog) {
	d.t.Helper()
	res := d.must(exitOK, append(append([]string{"delivery", "settle"}, args...), "-json")...)
	var o settleOut
	if err := json.Unmarshal([]byte(res.stdout), &o); err != nil {
		d.t.Fatalf("settle -json: %v\n%s", err, res.stdout)
	}
	logs := changeLines(d.t, res.stderr)
	if len(logs) != 1 {
		d.t.Fatalf("settle logged %d lines: %s", len(logs), res.stderr)
	}
	return o, logs[0]
}

// replay repeats the original create_ticket call and checks that it is
// answered from the stored operation with the delivery as settled.
func (d *desk) replay(user, requestID, title, id string) map[string]any {
	d.t.Helper()
	a := d.call(createBody(user, requestID, title))
	if a["ticket_id"] != id || a["deduplicated"] != true {
		d.t.Fatalf("the retry of the original call answered %v", a)
	}
	return a
}

// TestEachSettlementAndWhatTheModelIsToldAfter: each decision, its audit
// record and its log line, and the answers of a retry of the original
// call and of get_ticket afterwards, through the real handler.
func TestEachSettlementAndWhatTheModelIsToldAfter(t *testing.T) {
	d := newDesk(t)
	const secret = "the customer's password is hunter2"

	t.Run("delivered", func(t *testing.T) {
		id := d.create("user-a", "req-s-delivered", "Found later")
		d.attempt(id, fault(helpdesk.FailAfter, 500, "")) // the helpdesk created it, then answered 500
		hdTicket := d.hd.TicketsByExternalID(id)[0]
		v := d.record(id).Version
		o, log := d.settle("-ticket", id, "-as", "delivered", "-expect", "uncertain", "-version", strconv.FormatInt(v, 10),
			"-helpdesk-id", strconv.FormatInt(hdTicket.ID, 10), "-url", hdTicket.URL, "-reason", "found it: "+secret)
		if !o.Settled || o.From != "uncertain" || o.To != "delivered" || o.Delivery.HelpdeskID != strconv.FormatInt(hdTicket.ID, 10) ||
			o.Delivery.URL != hdTicket.URL || o.Delivery.Version != v+1 || o.Delivery.DeliveredAt == "" {
			t.Errorf("settled %+v %+v", o, o.Delivery)
		}
		if a := o.Delivery.Audit; len(a) != 1 || a[0].Who != "alice" || a[0].Action != "settle.delivered" || a[0].From != "uncertain" ||
			a[0].To != "delivered" || a[0].HelpdeskID != strconv.FormatInt(hdTicket.ID, 10) || a[0].Reason != "found it: "+secret || a[0].At == "" {
			t.Errorf("audit %+v", a)
		}
		checkLog(t, log, "delivery.settle.delivered", id, "uncertain", "delivered", v+1)
		if log.HelpdeskID != strconv.FormatInt(hdTicket.ID, 10) {
			t.Errorf("log line %+v lacks the helpdesk id", log)
		}
		a := d.replay("user-a", "req-s-delivered", "Found later", id)
		if viewState(a) != "delivered" || viewField(a, "helpdesk_id") != strconv.FormatInt(hdTicket.ID, 10) || viewField(a, "url") != hdTicket.URL {
			t.Errorf("retry answered %v", a)
		}
		if tk := d.getTicket("user-b", id); viewState(tk) != "delivered" {
			t.Errorf("get_ticket answered %v", tk)
		}
		// Nothing is sent again.
		if rep := d.attempt(id, nil); rep.Outcome != delivery.OutcomeSkipped || d.atHelpdesk(id) != 1 {
			t.Errorf("after settling: %+v, %d at the helpdesk", rep, d.atHelpdesk(id))
		}
	})

	t.Run("not-created", func(t *testing.T) {
		id := d.create("user-a", "req-s-notcreated", "Never arrived")
		// Answered 503 before creating anything, long enough ago that no
		// request can still be running at the helpdesk (Policy.ResendWait):
		// not-created is refused before that (TestNotCreatedTooEarly).
		ago := deskPolicy.ResendWait(delivery.Capabilities{}) + time.Second
		d.w.Now = func() time.Time { return time.Now().Add(-ago) }
		d.attempt(id, fault(helpdesk.FailBefore, 503, ""))
		d.w.Now = nil
		r := d.record(id)
		o, log := d.settle("-ticket", id, "-as", "not-created", "-expect", "uncertain", "-version", strconv.FormatInt(r.Version, 10))
		if o.To != "queued" || o.Delivery.Attempts != 0 || o.Delivery.MaybeSent || o.Delivery.IdempotencyKey != r.Key || o.Delivery.NextAttemptAt == "" {
			t.Errorf("settled %+v", o.Delivery)
		}
		if a := o.Delivery.Audit; len(a) != 1 || a[0].Action != "settle.not_created" || a[0].Note != dynamo.NotCreatedNote || a[0].Reason != "" {
			t.Errorf("audit %+v", a)
		}
		checkLog(t, log, "delivery.settle.not_created", id, "uncertain", "queued", r.Version+1)
		if a := d.replay("user-a", "req-s-notcreated", "Never arrived", id); viewState(a) != "queued" {
			t.Errorf("retry answered %v", a)
		}
		// It is listed for the sweep, which delivers it once, with the same key.
		var l listOut
		_ = json.Unmarshal([]byte(d.must(exitOK, "delivery", "list", "-state", "queued", "-json").stdout), &l)
		if len(l.Deliveries) != 1 || l.Deliveries[0].TicketID != id {
			t.Errorf("queued after not-created: %+v", l)
		}
		sw, err := d.w.Sweep(context.Background())
		if err != nil || sw.Outcomes[delivery.OutcomeDelivered] != 1 || d.atHelpdesk(id) != 1 || d.hd.TicketsByExternalID(id)[0].IdempotencyKey != r.Key {
			t.Errorf("sweep after not-created: %+v %v, %d at the helpdesk", sw, err, d.atHelpdesk(id))
		}
		if a := d.replay("user-a", "req-s-notcreated", "Never arrived", id); viewState(a) != "delivered" || viewField(a, "helpdesk_id") == "" {
			t.Errorf("retry after the sweep answered %v", a)
		}
	})

	t.Run("abandoned", func(t *testing.T) {
		id := d.create("user-c", "req-s-abandoned", "Refused")
		d.attempt(id, fault(helpdesk.FailBefore, 422, `{"error":"no"}`))
		o, log := d.settle("-ticket", id, "-as", "abandoned", "-expect", "failed", "-reason", "duplicate of 42; "+secret)
		if o.To != "abandoned" || o.Delivery.Reason != "duplicate of 42; "+secret || o.Delivery.Told.State != delivery.Abandoned {
			t.Errorf("settled %+v", o.Delivery)
		}
		checkLog(t, log, "delivery.settle.abandoned", id, "failed", "abandoned", 4)
		a := d.replay("user-c", "req-s-abandoned", "Refused", id)
		msg := viewField(a, "message")
		if viewState(a) != "abandoned" || !strings.Contains(msg, "support closed") || !strings.Contains(msg, "Do not create another ticket") || strings.Contains(msg, "hunter2") {
			t.Errorf("retry answered %v", a)
		}
		if tk := d.getTicket("user-c", id); viewState(tk) != "abandoned" {
			t.Errorf("get_ticket answered %v", tk)
		}
		if rep := d.attempt(id, nil); rep.Outcome != delivery.OutcomeSkipped || d.atHelpdesk(id) != 0 {
			t.Errorf("after abandoning: %+v", rep)
		}
	})
}

// checkLog checks a settlement's log line: who, what, the ticket, from,
// to, the new version, and never the reason.
func checkLog(t *testing.T, l changeLog, action, id, from, to string, version int64) {
	t.Helper()
	b, _ := json.Marshal(l)
	if l.Action != action || l.TicketID != id || l.Who != "alice" || l.Via != envOperator || l.Field != "delivery" ||
		l.Before != from || l.After != to || l.Version != version || l.Table == "" || strings.Contains(string(b), "hunter2") {
		t.Errorf("log line %s", b)
	}
}

// TestSettleRefusalsChangeNothing: each refusal says why with its exit
// code, logs nothing and leaves every item as it was.
func TestSettleRefusalsChangeNothing(t *testing.T) {
	d := newDesk(t)
	uncertain := d.create("user-a", "req-r-1", "Uncertain")
	d.attempt(uncertain, fault(helpdesk.FailAfter, 500, ""))
	v := strconv.FormatInt(d.record(uncertain).Version, 10)
	delivered := d.create("user-a", "req-r-2", "Delivered")
	d.attempt(delivered, nil)
	leased := d.create("user-a", "req-r-3", "Leased")
	until := time.Now().Add(time.Minute)
	if _, _, err := d.store.Lease(context.Background(), leased, delivery.Lease{Owner: "w-test", From: time.Now(), Until: until}); err != nil {
		t.Fatal(err)
	}
	plain := created(t, d.env, localdb.DemoUsers[0], strings.Repeat("d", 64), "req-r-4", "", time.Now())
	before := d.items()
	s := func(args ...string) []string { return append([]string{"delivery", "settle"}, args...) }
	for _, tc := range []struct {
		code int
		args []string
		says string
	}{
		{exitConflict, s("-ticket", delivered, "-as", "not-created", "-expect", "queued", "-version", "2"), "is delivered already (helpdesk "},
		{exitConflict, s("-ticket", uncertain, "-as", "abandoned", "-expect", "failed", "-reason", "r"), "is uncertain now, not failed as -expect says (by the delivery worker at"},
		{exitConflict, s("-ticket", uncertain, "-as", "not-created", "-expect", "uncertain", "-version", "2"), "is at version " + v + ", not 2 as -version says"},
		{exitConflict, s("-ticket", leased, "-as", "abandoned", "-expect", "queued", "-reason", "r"), "an attempt is in progress until " + msTime(until.Truncate(time.Millisecond)) + ", try again after"},
		{exitConflict, s("-ticket", plain.ID, "-as", "abandoned", "-expect", "failed", "-reason", "r"), "has no delivery"},
		{exitNotFound, s("-ticket", ticket.NewID(), "-as", "abandoned", "-expect", "failed", "-reason", "r"), "no ticket"},
		{exitUsage, s("-ticket", "not-a-ticket", "-as", "abandoned", "-expect", "failed", "-reason", "r"), "not a ticket id"},
		{exitUsage, s("-ticket", uncertain, "-as", "abandoned", "-reason", "r"), "-expect is required"},
		{exitUsage, s("-ticket", uncertain, "-as", "delivered", "-expect", "delivered", "-helpdesk-id", "1"), "is not settled"},
		{exitUsage, s("-ticket", uncertain, "-as", "abandoned", "-expect", "in_progress", "-reason", "r"), "wait until it ends"},
		{exitUsage, s("-ticket", uncertain, "-as", "closed", "-expect", "uncertain"), "-as must be"},
		{exitUsage, s("-ticket", uncertain, "-as", "not-created", "-expect", "uncertain"), "give -version N"},
		{exitUsage, s("-ticket", uncertain, "-as", "not-created", "-expect", "uncertain", "-version", "0"), "not a delivery version"},
		{exitUsage, s("-ticket", uncertain, "-as", "delivered", "-expect", "uncertain"), "needs -helpdesk-id"},
		{exitUsage, s("-ticket", uncertain, "-as", "delivered", "-expect", "uncertain", "-helpdesk-id", "1", "-url", "javascript:alert(1)"), "not an http"},
		{exitUsage, s("-ticket", uncertain, "-as", "abandoned", "-expect", "uncertain"), "needs -reason"},
		{exitUsage, s("-ticket", uncertain, "-as", "abandoned", "-expect", "abandoned", "-reason", "r"), "abandoned already"},
		{exitUsage, s("-ticket", uncertain, "-as", "abandoned", "-expect", "uncertain", "-reason", "r", "-helpdesk-id", "1"), "go with -as delivered only"},
		{exitUsage, s("-ticket", uncertain, "-as", "abandoned", "-expect", "uncertain", "-reason", strings.Repeat("x", dynamo.MaxSettleReason+1)), "longer than"},
		{exitUsage, s("-ticket", uncertain, "-as", "abandoned", "-expect", "uncertain", "-reason", "r", "-operator", "bad\nname"), "-operator must be"},
	} {
		res := d.run(tc.args...)
		if res.code != tc.code || !strings.Contains(res.stderr, tc.says) {
			t.Errorf("%q: exit %d, want %d; stderr %q should say %q", tc.args[2:], res.code, tc.code, res.stderr, tc.says)
		}
		if len(changeLines(t, res.stderr)) != 0 || res.stdout != "" {
			t.Errorf("%q printed %q and logged a change", tc.args[2:], res.stdout)
		}
	}
	if diff := sameItems(before, d.items()); diff != "" {
		t.Errorf("the refusals changed %s", diff)
	}
	// Without an operator nothing is settled.
	delete(d.vars, "ONCECALL_OPERATOR")
	if res := d.run(s("-ticket", uncertain, "-as", "abandoned", "-expect", "uncertain", "-reason", "r")...); res.code != exitUsage || !strings.Contains(res.stderr, "ONCECALL_OPERATOR") {
		t.Errorf("no operator: %d %s", res.code, res.stderr)
	}
	// A second operator who saw the same state loses to the first.
	d.vars["ONCECALL_OPERATOR"] = "alice"
	d.settle("-ticket", uncertain, "-as", "abandoned", "-expect", "uncertain", "-reason", "first")
	res := d.must(exitConflict, s("-ticket", uncertain, "-as", "delivered", "-expect", "uncertain", "-helpdesk-id", "1", "-operator", "bob")...)
	if !strings.Contains(res.stderr, `is abandoned now, not uncertain as -expect says (settle.abandoned by "alice" at`) {
		t.Errorf("the second operator was told %q", res.stderr)
	}
}

// TestSettleRacesTheWorker runs a settlement and the worker's delivery of
// the same queued ticket at once, many times: exactly one wins each time,
// the other is told why, and the helpdesk never gets the ticket twice
// (nor at all when the settlement won). The start points are spread at
// random so that both orders happen on an idle machine; each order is
// forced in TestSettleAndWorkerInterleavings.
func TestSettleRacesTheWorker(t *testing.T) {
	d := newDesk(t)
	rng := suitetest.Rand(t)
	const iterations = 100
	var settleWon, workerWon, inProgress, deliveredFirst int
	// The settlement reads before it writes, so it takes longer than the
	// worker's lease to reach its write: the worker starts at a random
	// point within twice the last settlement's run, so that either can
	// write first, whatever this machine's speed.
	settleTook := 3 * time.Millisecond
	for i := range iterations {
		id := d.create("user-a", "req-race-"+strconv.Itoa(i), "Race "+strconv.Itoa(i))
		waitSettle, waitWorker := time.Duration(rng.IntN(3000))*time.Microsecond, time.Duration(rng.Int64N(int64(2*settleTook)))
		args := []string{"delivery", "settle", "-ticket", id, "-as", "abandoned", "-expect", "queued", "-reason", "race"}
		if i%2 == 1 {
			args = []string{"delivery", "settle", "-ticket", id, "-as", "delivered", "-expect", "queued", "-helpdesk-id", "by-hand-" + strconv.Itoa(i)}
		}
		var wg sync.WaitGroup
		var res result
		var rep delivery.Report
		var werr error
		wg.Add(2)
		go func() {
			defer wg.Done()
			time.Sleep(waitSettle)
			start := time.Now()
			res = d.run(args...)
			settleTook = max(time.Since(start), time.Millisecond)
		}()
		go func() { defer wg.Done(); time.Sleep(waitWorker); rep, werr = d.w.Deliver(context.Background(), id) }()
		wg.Wait()
		if werr != nil {
			t.Fatalf("iteration %d: Deliver: %v", i, werr)
		}
		rec := d.record(id)
		switch {
		case res.code == exitOK && rep.Outcome == delivery.OutcomeSkipped:
			settleWon++
			if d.atHelpdesk(id) != 0 || rec.State == delivery.Queued || len(rec.Audit) != 1 || rec.Attempts != 0 {
				t.Errorf("iteration %d: the settlement won, yet %d at the helpdesk, record %+v", i, d.atHelpdesk(id), rec)
			}
			if rep.State != rec.State {
				t.Errorf("iteration %d: the worker was told %s, the record is %s", i, rep.State, rec.State)
			}
		case res.code == exitConflict && rep.Outcome == delivery.OutcomeDelivered:
			workerWon++
			switch {
			case strings.Contains(res.stderr, "an attempt is in progress until"):
				inProgress++
			case strings.Contains(res.stderr, "is delivered already"):
				deliveredFirst++
			default:
				t.Errorf("iteration %d: the settlement was refused with %q", i, res.stderr)
			}
			if d.atHelpdesk(id) != 1 || rec.State != delivery.Delivered || len(rec.Audit) != 0 {
				t.Errorf("iteration %d: the worker won, yet %d at the helpdesk, record %+v", i, d.atHelpdesk(id), rec)
			}
		default:
			t.Errorf("iteration %d: settle exit %d (%s), worker %+v: want exactly one winner", i, res.code, res.stderr, rep)
		}
	}
	t.Logf("%d races: settlement won %d, worker won %d (settlement refused: attempt in progress %d, delivered already %d)",
		iterations, settleWon, workerWon, inProgress, deliveredFirst)
	// Which side wins depends on this machine's speed and load, so it is
	// no verdict: TestSettleAndWorkerInterleavings forces each order.
	if settleWon == 0 || workerWon == 0 {
		t.Logf("one side never won in %d races (settlement %d, worker %d); each order is forced in TestSettleAndWorkerInterleavings", iterations, settleWon, workerWon)
	}
}

// blocking is the real webhook destination with a hook run before each
// create, to interleave a settlement with an attempt in flight.
type blocking struct {
	*webhook.Destination
	before func()
}

func (b *blocking) Create(ctx context.Context, key string, t ticket.Ticket) delivery.Result {
	b.before()
	return b.Destination.Create(ctx, key, t)
}

// TestSettleAndWorkerInterleavings: the interleavings of a settlement and
// an attempt, each forced.
func TestSettleAndWorkerInterleavings(t *testing.T) {
	d := newDesk(t)

	t.Run("settle while the attempt holds its lease", func(t *testing.T) {
		id := d.create("user-a", "req-i-1", "Held")
		var res result
		w := *d.w
		w.Destination = &blocking{Destination: d.dest, before: func() {
			res = d.run("delivery", "settle", "-ticket", id, "-as", "abandoned", "-expect", "queued", "-reason", "r")
		}}
		rep, err := w.Deliver(context.Background(), id)
		if err != nil || rep.Outcome != delivery.OutcomeDelivered {
			t.Fatalf("the attempt: %+v, %v", rep, err)
		}
		if res.code != exitConflict || !strings.Contains(res.stderr, "an attempt is in progress until") || !strings.Contains(res.stderr, "try again after") {
			t.Errorf("settling during the attempt: exit %d %q", res.code, res.stderr)
		}
		if r := d.record(id); r.State != delivery.Delivered || len(r.Audit) != 0 || r.Version != 3 || d.atHelpdesk(id) != 1 {
			t.Errorf("after the attempt: %+v", r)
		}
	})

	t.Run("the worker's lease after a settlement", func(t *testing.T) {
		id := d.create("user-a", "req-i-2", "Settled first")
		d.settle("-ticket", id, "-as", "abandoned", "-expect", "queued", "-reason", "r")
		rep := d.attempt(id, nil)
		if rep.Outcome != delivery.OutcomeSkipped || rep.State != delivery.Abandoned || d.atHelpdesk(id) != 0 {
			t.Errorf("the worker after the settlement: %+v, %d at the helpdesk", rep, d.atHelpdesk(id))
		}
	})

	t.Run("a lease the operator's clock calls ended is still its owner's", func(t *testing.T) {
		id := d.create("user-a", "req-i-3", "Late worker")
		// The worker's clock is an hour behind: by the operator's clock its
		// lease has ended while its request is in flight. The lease is
		// judged by its owner: the settlement is refused, and the worker's
		// result stands.
		var res result
		w := *d.w
		w.Now = func() time.Time { return time.Now().Add(-time.Hour) }
		w.Destination = &blocking{Destination: d.dest, before: func() {
			res = d.run("delivery", "settle", "-ticket", id, "-as", "delivered", "-expect", "queued", "-helpdesk-id", "by-hand")
		}}
		rep, err := w.Deliver(context.Background(), id)
		if err != nil || rep.Outcome != delivery.OutcomeDelivered {
			t.Fatalf("the late worker: %+v, %v; want delivered", rep, err)
		}
		if res.code != exitConflict {
			t.Fatalf("the settlement while the lease is recorded: exit %d %s, want %d", res.code, res.stderr, exitConflict)
		}
		r := d.record(id)
		if r.State != delivery.Delivered || r.Receipt.ID == "by-hand" || len(r.Audit) != 0 || r.LeaseOwner != "" || d.atHelpdesk(id) != 1 {
			t.Errorf("the record kept %+v; want the worker's result", r)
		}
		// A Finish whose lease is gone is refused, whatever it carries.
		err = d.store.Finish(context.Background(), id, "any-old-owner", delivery.Record{State: delivery.Queued})
		if !errors.Is(err, delivery.ErrLeaseLost) {
			t.Errorf("Finish without the lease: %v, want ErrLeaseLost", err)
		}
	})
}

// TestNotCreatedTooEarly: a not-created decision sends the ticket again
// under the same key, so it is refused while the last request that may
// have created the ticket could still be running at the helpdesk, or its
// search might not show the ticket yet (Policy.ResendWait); the refusal
// says until when, and writes nothing. Then it is made.
func TestNotCreatedTooEarly(t *testing.T) {
	d := newDesk(t)
	id := d.create("user-a", "req-early", "Too early")
	d.attempt(id, fault(helpdesk.FailAfter, 500, "")) // created, then 500: it may exist
	r := d.record(id)
	if r.State != delivery.Uncertain || r.SafeAfter.IsZero() {
		t.Fatalf("record %+v", r)
	}
	before := d.items()
	res := d.run("delivery", "settle", "-ticket", id, "-as", "not-created", "-expect", "uncertain", "-version", strconv.FormatInt(r.Version, 10))
	if res.code != exitConflict || !strings.Contains(res.stderr, "not-created is refused until "+msTime(r.SafeAfter)) {
		t.Fatalf("not-created at once: exit %d %q", res.code, res.stderr)
	}
	if diff := sameItems(before, d.items()); diff != "" {
		t.Fatalf("a refused settlement changed the table: %s", diff)
	}
	// The store's clock judges, to the second (its answers' Date).
	time.Sleep(time.Until(r.SafeAfter) + time.Second)
	if res := d.run("delivery", "settle", "-ticket", id, "-as", "not-created", "-expect", "uncertain", "-version", strconv.FormatInt(r.Version, 10)); res.code != exitOK {
		t.Fatalf("not-created once safe: exit %d %s", res.code, res.stderr)
	}
}

// TestNotCreatedHorizonIsTheStoresClock: the horizon of a not-created
// decision is judged on the store's clock, from its answers, never on the
// operator's: a tool whose clock runs an hour fast is refused exactly as
// an exact one is, and writes nothing.
func TestNotCreatedHorizonIsTheStoresClock(t *testing.T) {
	d := newDesk(t)
	id := d.create("user-a", "req-skewed", "Skewed clock")
	d.attempt(id, fault(helpdesk.FailAfter, 500, "")) // created, then 500: it may exist
	r := d.record(id)
	if r.State != delivery.Uncertain || !r.SafeAfter.After(time.Now()) {
		t.Fatalf("record %+v", r)
	}
	before := d.items()
	d.clock = func() time.Time { return time.Now().Add(time.Hour) }
	res := d.run("delivery", "settle", "-ticket", id, "-as", "not-created", "-expect", "uncertain", "-version", strconv.FormatInt(r.Version, 10))
	if res.code != exitConflict || !strings.Contains(res.stderr, "not-created is refused until ") {
		t.Fatalf("not-created with the operator's clock an hour fast: exit %d %q", res.code, res.stderr)
	}
	if diff := sameItems(before, d.items()); diff != "" {
		t.Fatalf("a refused settlement changed the table: %s", diff)
	}
}

// TestRecoverStrandedDeliveries: a ticket whose first attempt never came
// (the stream path gave up on its record) is found by delivery recover,
// listed for the sweep without -dry-run, and delivered by the worker's
// next sweep; a dry run changes nothing.
func TestRecoverStrandedDeliveries(t *testing.T) {
	d := newDesk(t)
	id := d.create("user-a", "r-stranded", "Printer jam")
	// Written as a version without the sweep's backstop wrote new tickets:
	// queued, outside the attention index, known to the stream alone.
	if _, err := d.env.Client.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName: aws.String(d.env.Table), Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ticket#" + id}},
		UpdateExpression: aws.String("REMOVE attn_shard, attn_due, attn, attn_at, next_at"),
	}); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	d.clock = func() time.Time { return later }
	before := d.items()
	dry := d.must(exitOK, "delivery", "recover", "-dry-run", "-json")
	var out struct {
		DryRun      bool     `json:"dry_run"`
		Stranded    []string `json:"stranded"`
		Rescheduled []string `json:"rescheduled"`
	}
	if err := json.Unmarshal([]byte(dry.stdout), &out); err != nil || !out.DryRun || !slices.Equal(out.Stranded, []string{id}) || len(out.Rescheduled) != 0 {
		t.Fatalf("dry run: %s (%v)", dry.stdout, err)
	}
	if diff := sameItems(before, d.items()); diff != "" {
		t.Fatalf("a dry run changed the table: %s", diff)
	}
	res := d.must(exitOK, "delivery", "recover", "-json")
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil || !slices.Equal(out.Rescheduled, []string{id}) {
		t.Fatalf("recover: %s (%v)", res.stdout, err)
	}
	if !strings.Contains(res.stderr, `"action":"delivery.recover"`) || !strings.Contains(res.stderr, id) {
		t.Fatalf("no change line: %s", res.stderr)
	}
	d.w.Now = func() time.Time { return later }
	sw, err := d.w.Sweep(context.Background())
	if err != nil || sw.Outcomes[delivery.OutcomeDelivered] != 1 || d.atHelpdesk(id) != 1 {
		t.Fatalf("the sweep after recovery: %+v, %v, %d at the helpdesk", sw, err, d.atHelpdesk(id))
	}
	if again := d.must(exitOK, "delivery", "recover", "-json"); !strings.Contains(again.stdout, `"stranded": []`) {
		t.Fatalf("still stranded: %s", again.stdout)
	}
}
