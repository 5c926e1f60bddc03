package dynamo_test

import (
	"context"
	"testing"
	"time"
)

// TestExpirySecondIsKeptWhole claims at a time that is not on a whole second.
// expires_at is stored in epoch seconds, and the claim condition compares
// seconds, so the record must also be judged live to the end of its expiry
// second: a call in that second is a replay, not a claim that can never
// succeed and ends busy.
func TestExpirySecondIsKeptWhole(t *testing.T) {
	f := newFixture(t, nil)
	f.now = t0.Add(500 * time.Millisecond)
	rec, tk := f.claim("k1") // expires at t0 + 1h + 0.5s, stored as t0 + 1h
	if _, _, err := f.store.Create(context.Background(), rec, tk, nil); err != nil {
		t.Fatal(err)
	}
	for _, at := range []time.Duration{time.Hour - 300*time.Millisecond, time.Hour + 400*time.Millisecond} {
		f.now = t0.Add(500 * time.Millisecond).Add(at)
		rec2, tk2 := f.claim("k1")
		existing, taken, err := f.store.Create(context.Background(), rec2, tk2, nil)
		if err != nil || !taken || existing.TicketID != tk.ID {
			t.Fatalf("at creation+%v: Create = %+v, %v; want the first claim", at, existing, err)
		}
	}
	f.now = t0.Add(time.Hour + time.Second)
	rec3, tk3 := f.claim("k1")
	if existing, taken, err := f.store.Create(context.Background(), rec3, tk3, nil); err != nil || taken {
		t.Fatalf("after the expiry second: Create = %+v, %v; want a new claim", existing, err)
	}
}
