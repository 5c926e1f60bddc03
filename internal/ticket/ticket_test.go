package ticket_test

import (
	"testing"

	"github.com/oncecall/oncecall/internal/ticket"
)

func TestNewIDIsAVersion4UUID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := ticket.NewID()
		if !ticket.ValidID(id) {
			t.Fatalf("NewID() = %q, not a version 4 UUID", id)
		}
		if seen[id] {
			t.Fatalf("NewID() repeated %q", id)
		}
		seen[id] = true
	}
}
