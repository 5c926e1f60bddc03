package callback_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/webhook"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
)

// outboxRig is a rig whose handler queues tickets for the local helpdesk.
type outboxRig struct {
	*rig
	hd *helpdesk.Server
	w  *delivery.Worker
}

func newOutboxRig(t *testing.T, caps delivery.Capabilities, inline time.Duration) *outboxRig {
	t.Helper()
	r := &outboxRig{rig: newRig(t)}
	hd, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{Capabilities: caps})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hd.Close() })
	r.hd = hd
	dest, err := webhook.New(hd.WebhookURL(), webhook.Options{Capabilities: caps, Timeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dest.CloseIdleConnections)
	policy := delivery.DefaultPolicy
	policy.Timeout = 500 * time.Millisecond
	r.w = &delivery.Worker{Store: r.store, Destination: dest, Policy: policy, Now: r.clock}
	r.h.Outbox = &delivery.Outbox{Name: webhook.Name, Worker: r.w, Inline: inline}
	return r
}

// queued reports whether ticket id's delivery is queued in the store: what
// the table's stream (its filter lets new queued tickets through) and the
// sweep bring to the worker.
func (r *outboxRig) queued(t *testing.T, id string) bool {
	t.Helper()
	d, err := r.store.Delivery(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return d != nil && d.State == delivery.Queued
}

func deliveryOf(t *testing.T, p reply) map[string]any {
	t.Helper()
	d, ok := p.body["delivery"].(map[string]any)
	if !ok {
		t.Fatalf("no delivery member: %s", p.raw)
	}
	return d
}

// TestEveryAnswerCarriesTheDeliveryAsItIsNow: the first answer says
// queued; once the worker has delivered, a repeat and get_ticket say
// delivered with the helpdesk's reference, and the repeat sends nothing.
func TestEveryAnswerCarriesTheDeliveryAsItIsNow(t *testing.T) {
	r := newOutboxRig(t, delivery.Capabilities{DedupWindow: time.Hour}, 0)
	first := r.call(create("user-a", "r-1", signIn))
	id := first.str("ticket_id")
	if d := deliveryOf(t, first); first.str("status") != "created" || d["state"] != "queued" || !strings.Contains(d["message"].(string), "do not call again") {
		t.Fatalf("first answer %s", first.raw)
	}
	if !r.queued(t, id) {
		t.Fatal("the committed ticket was not left queued for the worker")
	}
	if n := r.hd.Counts().CreateRequests; n != 0 {
		t.Fatalf("the callback sent %d creates without inline attempts", n)
	}
	if rep, err := r.w.Deliver(context.Background(), id); err != nil || rep.Outcome != delivery.OutcomeDelivered {
		t.Fatalf("Deliver = %+v, %v", rep, err)
	}
	again := r.call(create("user-a", "r-1", signIn))
	d := deliveryOf(t, again)
	if again.body["deduplicated"] != true || again.str("ticket_id") != id || d["state"] != "delivered" || d["helpdesk_id"] != "1" || d["url"] == "" {
		t.Fatalf("repeat %s", again.raw)
	}
	got := r.call(callBody("user-a", "", "get_ticket", `{"ticket_id":"`+id+`"}`))
	tk, _ := got.body["ticket"].(map[string]any)
	if gd, _ := tk["delivery"].(map[string]any); gd["state"] != "delivered" || gd["helpdesk_id"] != "1" {
		t.Fatalf("get_ticket %s", got.raw)
	}
	if n := r.hd.Counts().CreateRequests; n != 1 {
		t.Fatalf("%d create requests at the helpdesk, want 1: a repeat never delivers again", n)
	}
	if n := r.tickets(); n != 1 {
		t.Fatalf("%d ticket items", n)
	}
}

func TestWithoutADestinationNothingChanges(t *testing.T) {
	r := newRig(t)
	p := r.call(create("user-a", "r-1", signIn))
	if strings.Contains(p.raw, "delivery") {
		t.Fatalf("an answer without a destination mentions delivery: %s", p.raw)
	}
}

func TestInlineFirstAttempt(t *testing.T) {
	r := newOutboxRig(t, delivery.Capabilities{DedupWindow: time.Hour}, 2*time.Second)
	p := r.call(create("user-a", "r-1", signIn))
	d := deliveryOf(t, p)
	if d["state"] != "delivered" || d["helpdesk_id"] != "1" {
		t.Fatalf("inline answer %s", p.raw)
	}
	if r.queued(t, p.str("ticket_id")) {
		t.Fatal("a delivered ticket was left queued for the worker too")
	}
	if n := len(r.hd.TicketsByExternalID(p.str("ticket_id"))); n != 1 {
		t.Fatalf("%d tickets at the helpdesk", n)
	}
}

// TestInlineFailureLeavesTheTicketToTheWorker: the helpdesk fails the
// inline attempt; the answer says queued and the worker finishes.
func TestInlineFailureLeavesTheTicketToTheWorker(t *testing.T) {
	r := newOutboxRig(t, delivery.Capabilities{DedupWindow: time.Hour}, 2*time.Second)
	if err := r.hd.Inject(helpdesk.Fault{Kind: helpdesk.FailAfter}); err != nil {
		t.Fatal(err)
	}
	p := r.call(create("user-a", "r-1", signIn))
	id := p.str("ticket_id")
	if d := deliveryOf(t, p); d["state"] != "queued" || !r.queued(t, id) {
		t.Fatalf("answer %s, queued in the store %v", p.raw, r.queued(t, id))
	}
	r.advance(time.Minute) // past the scheduled retry, inside the helpdesk's window
	if rep, err := r.w.Deliver(context.Background(), id); err != nil || rep.Outcome != delivery.OutcomeDelivered {
		t.Fatalf("the worker's retry: %+v, %v", rep, err)
	}
	if n := len(r.hd.TicketsByExternalID(id)); n != 1 {
		t.Fatalf("%d tickets at the helpdesk", n)
	}
}

// TestInlineKeepsTheDeadlineReserve: a helpdesk slower than the caller's
// deadline does not make the callback miss it.
func TestInlineKeepsTheDeadlineReserve(t *testing.T) {
	r := newOutboxRig(t, delivery.Capabilities{DedupWindow: time.Hour}, 5*time.Second)
	if err := r.hd.Inject(helpdesk.Fault{Kind: helpdesk.Slow, Delay: 3 * time.Second}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	ans := r.h.Call(ctx, callback.Request{Nonce: validNonce(t), Body: []byte(create("user-a", "r-1", signIn))})
	if took := time.Since(start); took > time.Second {
		t.Fatalf("answered after %v, past the 1 s deadline", took)
	}
	var body map[string]any
	if err := json.Unmarshal(ans.Body(), &body); err != nil || ans.Status != 200 || body["status"] != "created" {
		t.Fatalf("answer %d %s", ans.Status, ans.Body())
	}
	if d, _ := body["delivery"].(map[string]any); d["state"] != "queued" {
		t.Fatalf("answer %s", ans.Body())
	}
}

// TestDeduplicationOutlivesDelivery: with a destination, an operation is
// kept while its delivery may still be attempted or wait for a person
// (the delivery horizon: the maximum age, one lease, delivery.SettleHorizon),
// even when RETENTION is shorter, so that the same call past RETENTION is
// still the same operation and makes no second ticket nor delivery. Past
// the horizon the retention window has ended and the call is new.
func TestDeduplicationOutlivesDelivery(t *testing.T) {
	r := newOutboxRig(t, delivery.Capabilities{DedupWindow: time.Hour}, 0)
	r.h.Retention = time.Minute
	horizon := r.w.Policy.Horizon()
	r.h.Outbox = &delivery.Outbox{Name: webhook.Name, Worker: r.w, Horizon: horizon}
	first := r.call(create("user-a", "r-1", signIn))
	id := first.str("ticket_id")
	if kind(first) != "created" {
		t.Fatalf("first %s", first.raw)
	}
	rec := r.operation(t, "user-a", "r-1", signIn)
	if want := r.clock().Add(horizon).Truncate(time.Second); rec == nil || rec.ExpiresAt.Before(want) {
		t.Fatalf("operation kept until %v, want at least %v (the delivery horizon)", rec.ExpiresAt, want)
	}
	r.advance(time.Hour) // past RETENTION, inside the horizon
	again := r.call(create("user-a", "r-1", signIn))
	if kind(again) != "deduplicated" || again.str("ticket_id") != id {
		t.Fatalf("past RETENTION, inside the delivery horizon: %s", again.raw)
	}
	if n := r.tickets(); n != 1 {
		t.Fatalf("%d tickets, want 1", n)
	}
	r.advance(horizon)
	if late := r.call(create("user-a", "r-1", signIn)); kind(late) != "created" || late.str("ticket_id") == id {
		t.Fatalf("past the horizon: %s", late.raw)
	}
}
