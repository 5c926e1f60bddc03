package delivery_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/delivery/webhook"
	"github.com/oncecall/oncecall/internal/delivery/zendesk"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
)

// TestResendAfterNotCreated: the helpdesk answers every automatic attempt
// with a 503 before creating anything, the delivery ends for a person, and
// the operator settles it "not created". The resend then creates exactly
// one ticket and the delivery becomes delivered, for every destination:
// where the helpdesk keeps its answer per key, errors included (Stripe's
// rule), under a key of the resend's own, since the ticket's key would
// only get the old 503 again; everywhere else under the ticket's key, so
// that a ticket the operator missed would be found instead of made twice.
func TestResendAfterNotCreated(t *testing.T) {
	for _, c := range []struct {
		name  string
		front string
		caps  delivery.Capabilities
		// newKey: the resend goes under ResendKey(key, 1).
		newKey bool
	}{
		{"webhook replaying errors per key", webhook.Name, delivery.Capabilities{DedupWindow: 2 * time.Hour, ReplaysErrors: true}, true},
		{"webhook deduplicating successes", webhook.Name, delivery.Capabilities{DedupWindow: 2 * time.Hour}, false},
		{"webhook without deduplication", webhook.Name, delivery.Capabilities{}, false},
		{"zendesk", zendesk.Name, delivery.Capabilities{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newE2E(t, c.front, c.caps)
			// Every automatic attempt's create fails; a helpdesk that
			// replays errors needs only the first.
			if err := e.hd.Inject(helpdesk.Fault{Kind: helpdesk.FailBefore, Status: 503, Count: e2ePolicy.MaxAttempts + 2}); err != nil {
				t.Fatal(err)
			}
			id := e.ticket()
			first := e.settle(id)
			if !first.State.NeedsPerson() {
				t.Fatalf("after the automatic attempts: %+v, want a state for a person", first)
			}
			e.hd.ClearFaults()
			if n := len(e.hd.TicketsByExternalID(id)); n != 0 {
				t.Fatalf("%d tickets at the helpdesk before the resend", n)
			}
			d := e.record(id)
			e.advance(d.SafeAfter.Sub(e.clock()) + time.Second)
			admin := dynamo.NewAdmin(e.env.Client, e.env.Table)
			if _, err := admin.Settle(context.Background(), dynamo.Settlement{
				TicketID: id, As: dynamo.SettleNotCreated, Expect: first.State, Version: d.Version, Actor: delivery.Actor{Who: "alice"}, At: e.clock(),
			}); err != nil {
				t.Fatalf("Settle not created: %v", err)
			}
			rep := e.settle(id)
			got := e.hd.TicketsByExternalID(id)
			if rep.State != delivery.Delivered || len(got) != 1 {
				t.Fatalf("after the resend: %+v with %d tickets at the helpdesk; want delivered and exactly one", rep, len(got))
			}
			d = e.record(id)
			if d.Receipt.ID == "" || d.Receipt.ID != fmt.Sprint(got[0].ID) {
				t.Fatalf("recorded helpdesk id %q, the helpdesk has %d", d.Receipt.ID, got[0].ID)
			}
			keys := e.hd.KeyRequests()
			want := []string{d.Key}
			if c.newKey {
				want = append(want, delivery.ResendKey(d.Key, 1))
			}
			var seen []string
			for k := range keys {
				seen = append(seen, k)
			}
			slices.Sort(seen)
			slices.Sort(want)
			if !slices.Equal(seen, want) {
				t.Fatalf("keys the helpdesk saw: %v; want %v", keys, want)
			}
			if got[0].IdempotencyKey != d.KeyFor(e.w.Destination.Capabilities()) {
				t.Fatalf("the ticket was made under %q, the resend's key is %q", got[0].IdempotencyKey, d.KeyFor(e.w.Destination.Capabilities()))
			}
		})
	}
}

// TestResendKeys: the key a resend sends depends on the destination's
// capabilities and the operator's not-created decisions only.
func TestResendKeys(t *testing.T) {
	r := delivery.Record{Key: delivery.Key("op", "t-1")}
	replays := delivery.Capabilities{DedupWindow: time.Hour, ReplaysErrors: true}
	if r.KeyFor(replays) != r.Key || r.KeyFor(delivery.Capabilities{}) != r.Key {
		t.Fatal("before any decision the ticket's key is sent")
	}
	r.Audit = []delivery.Decision{{Action: "settle.abandoned"}, {Action: delivery.ActionNotCreated}}
	one := r.KeyFor(replays)
	if one == r.Key || one != delivery.ResendKey(r.Key, 1) || len(one) != len(r.Key) || len(one) > helpdesk.MaxKeyLength {
		t.Fatalf("first resend: %q (key %q)", one, r.Key)
	}
	if r.KeyFor(delivery.Capabilities{DedupWindow: time.Hour}) != r.Key {
		t.Fatal("a destination that deduplicates successes only keeps the ticket's key")
	}
	r.Audit = append(r.Audit, delivery.Decision{Action: delivery.ActionNotCreated})
	if two := r.KeyFor(replays); two == one || two == r.Key {
		t.Fatalf("second resend: %q, first %q", two, one)
	}
	if k := r.Keys(); len(k) != 3 || k[0] != r.Key || k[1] != one {
		t.Fatalf("Keys: %v", k)
	}
	if dynamo.SettleNotCreated.Action() != delivery.ActionNotCreated {
		t.Fatalf("the store audits %q, the worker counts %q", dynamo.SettleNotCreated.Action(), delivery.ActionNotCreated)
	}
}
