package callback_test

import (
	"slices"
	"testing"

	"github.com/oncecall/oncecall/internal/callback"
)

// TestOutcomeNames pins the outcome names: logs, metrics, the dashboard
// and the alarms of template.yaml read them, so none may change.
func TestOutcomeNames(t *testing.T) {
	want := []string{"created", "deduplicated", "rejected", "in_progress", "busy", "unauthorized", "error", "found", "not_found", "listed"}
	if !slices.Equal(callback.Outcomes, want) {
		t.Fatalf("Outcomes = %q, want %q", callback.Outcomes, want)
	}
}
