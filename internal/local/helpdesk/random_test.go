package helpdesk_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/local/helpdesk"
)

// TestRandomFaults checks that a share of creates misbehaves, that the
// draws follow the seed, and that refuse cannot be drawn.
func TestRandomFaults(t *testing.T) {
	count := func(seed uint64) (int, int) {
		s := start(t, helpdesk.Options{Random: &helpdesk.RandomFaults{Rate: 0.2, Seed: seed,
			Kinds: []helpdesk.Fault{{Kind: helpdesk.FailBefore}, {Kind: helpdesk.RateLimit}}}})
		c := client(5 * time.Second)
		failed := 0
		for i := range 200 {
			r := do(t, c, "POST", s.WebhookURL(), webhookBody(fmt.Sprint("x-", i), "t"), "Idempotency-Key", fmt.Sprint("k-", i))
			if r.status != 201 {
				failed++
			}
		}
		return failed, s.Counts().Faults
	}
	a, faults := count(7)
	b, _ := count(7)
	if a != faults || a != b {
		t.Fatalf("seed 7: %d and %d failed creates, %d faults counted", a, b, faults)
	}
	if a < 20 || a > 60 {
		t.Fatalf("%d of 200 creates failed at rate 0.2", a)
	}
	if _, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{Random: &helpdesk.RandomFaults{Rate: 0.1, Kinds: []helpdesk.Fault{{Kind: helpdesk.Refuse}}}}); err == nil {
		t.Fatal("refuse was accepted as a random fault")
	}
}
