package delivery_test

import (
	"context"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
)

// TestRequeuedTicketGetsAFreshBudget: a ticket an operator settles "not
// created" two days after its creation (past MaxAge) is attempted again,
// and its age budget counts from that decision, not from the creation.
func TestRequeuedTicketGetsAFreshBudget(t *testing.T) {
	r := newRig(t, neither)
	r.dest.creates = []delivery.Result{ambiguous, created}
	id := r.ticket()
	if rep := r.deliver(id); rep.State != delivery.Uncertain {
		t.Fatalf("first attempt: %+v, want uncertain", rep)
	}
	r.advance(48 * time.Hour)
	admin := dynamo.NewAdmin(r.env.Client, r.env.Table)
	rec, err := admin.Settle(context.Background(), dynamo.Settlement{
		TicketID: id, As: dynamo.SettleNotCreated, Expect: delivery.Uncertain, Version: r.record(id).Version, Actor: delivery.Actor{Who: "alice"}, At: r.clock(),
	})
	if err != nil || rec.Attempts != 0 || rec.MaybeSent {
		t.Fatalf("Settle: %+v, %v", rec, err)
	}
	if due := r.due(); len(due) != 1 || due[0] != id {
		t.Fatalf("due after the requeue: %v", due)
	}
	rep := r.deliver(id)
	if rep.Outcome != delivery.OutcomeDelivered || rep.Attempt != 1 {
		t.Fatalf("after the requeue: %+v; want delivered by a first attempt, not failed for its age", rep)
	}
	if n, keys := r.dest.sent(); n != 2 || keys[0] != keys[1] {
		t.Fatalf("sent %d: %v; want the same key twice", n, keys)
	}
	// Past MaxAge counted from the requeue, the budget is spent again.
	id2 := r.ticket()
	r.dest.creates = []delivery.Result{ambiguous}
	r.deliver(id2)
	r.advance(time.Hour)
	if _, err := admin.Settle(context.Background(), dynamo.Settlement{
		TicketID: id2, As: dynamo.SettleNotCreated, Expect: delivery.Uncertain, Version: r.record(id2).Version, Actor: delivery.Actor{Who: "alice"}, At: r.clock(),
	}); err != nil {
		t.Fatal(err)
	}
	r.advance(policy.MaxAge + time.Minute)
	if rep := r.deliver(id2); rep.State != delivery.Failed {
		t.Fatalf("a day after the requeue: %+v, want failed (attempts_spent)", rep)
	}
}
