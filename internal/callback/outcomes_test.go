package callback_test

import (
	"slices"
	"testing"

	"github.com/oncecall/oncecall/internal/callback"
)

// TestOutcomeNames pins the outcome names: logs, metrics, the dashboard
// and the alarms of template.yaml read them, so none may change; a new
// one (handshake: the MCP door's requests that call no function) is added
// at the end, with the dashboard.
func TestOutcomeNames(t *testing.T) {
	want := []string{"created", "deduplicated", "rejected", "in_progress", "busy", "unauthorized", "error", "found", "not_found", "listed", "handshake"}
	if !slices.Equal(callback.Outcomes, want) {
		t.Fatalf("Outcomes = %q, want %q", callback.Outcomes, want)
	}
}
