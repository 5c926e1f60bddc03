package dynamo_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
	"github.com/oncecall/oncecall/internal/dynamo"
)

// TestStrandedDeliveriesAreFoundAndRescheduled: of tickets queued long ago,
// the one nothing will attempt (its first attempt never made) and the one
// whose lease ended without a result are stranded; a fresh one, one with a
// live lease, one with a retry scheduled and a delivered one are not.
// Rescheduling lists them for the sweep, once.
func TestStrandedDeliveriesAreFoundAndRescheduled(t *testing.T) {
	o := newOutbox(t)
	ctx := context.Background()
	old := t0.Add(-time.Hour)
	never := o.ticket(alice, "r-never", old)
	died := o.ticket(alice, "r-died", old)
	if _, _, err := o.store.Lease(ctx, died.ID, delivery.Lease{Owner: "dead", From: old, Until: old.Add(30 * time.Second)}); err != nil {
		t.Fatal(err)
	}
	leased := o.ticket(alice, "r-leased", old)
	if _, _, err := o.store.Lease(ctx, leased.ID, delivery.Lease{Owner: "alive", From: t0, Until: t0.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	retry := o.ticket(alice, "r-retry", old)
	o.move(retry.ID, delivery.Queued, old)
	done := o.ticket(alice, "r-done", old)
	o.move(done.ID, delivery.Delivered, old)
	fresh := o.ticket(alice, "r-fresh", t0)

	got, err := o.admin.Stranded(ctx, t0.Add(-15*time.Minute), t0)
	slices.Sort(got)
	want := []string{never.ID, died.ID}
	slices.Sort(want)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("Stranded = %v, %v; want %v (not %s fresh, %s leased, %s retry, %s delivered)", got, err, want, fresh.ID, leased.ID, retry.ID, done.ID)
	}
	for _, id := range got {
		if err := o.admin.Reschedule(ctx, id, delivery.Actor{Who: "alice"}, t0); err != nil {
			t.Fatalf("Reschedule(%s): %v", id, err)
		}
		if err := o.admin.Reschedule(ctx, id, delivery.Actor{Who: "alice"}, t0); !errors.Is(err, dynamo.ErrConflict) {
			t.Fatalf("a second Reschedule(%s) = %v, want a conflict", id, err)
		}
	}
	due, _, err := o.store.Due(ctx, t0, "", 100)
	slices.Sort(due)
	wantDue := append([]string{retry.ID}, want...)
	slices.Sort(wantDue)
	if err != nil || !slices.Equal(due, wantDue) {
		t.Fatalf("due after rescheduling: %v, %v; want %v", due, err, wantDue)
	}
	d, err := o.store.Delivery(ctx, never.ID)
	if err != nil || len(d.Audit) != 1 || d.Audit[0].Action != dynamo.ActionRecover || d.Audit[0].Who != "alice" {
		t.Fatalf("audit %+v, %v", d, err)
	}
	if again, err := o.admin.Stranded(ctx, t0.Add(-15*time.Minute), t0); err != nil || len(again) != 0 {
		t.Fatalf("still stranded after rescheduling: %v, %v", again, err)
	}
}
