package mapping_test

import (
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/local/mapping"
)

// TestReadTheTemplate reads DeliverFunction's settings from the real
// template: what the local delivery path runs with.
func TestReadTheTemplate(t *testing.T) {
	s, err := mapping.Read("../../../template.yaml", "DeliverFunction")
	if err != nil {
		t.Fatal(err)
	}
	if s.StreamViewType != "NEW_IMAGE" || s.BatchSize < 1 || s.StartingPosition != "TRIM_HORIZON" || len(s.Filters) != 1 ||
		!s.ReportBatchItemFailures || s.MaxRetries < 0 || s.MaxRecordAge <= 0 || s.OnFailure != "SQS" || s.SweepEvery != time.Minute {
		t.Fatalf("settings %+v", s)
	}
	if _, err := mapping.Read("../../../template.yaml", "CallbackFunction"); err == nil {
		t.Fatal("a function without a DynamoDB event was read as one")
	}
}

func TestRate(t *testing.T) {
	for expr, want := range map[string]time.Duration{"rate(1 minute)": time.Minute, "rate(5 minutes)": 5 * time.Minute, "rate(2 hours)": 2 * time.Hour, "rate(1 day)": 24 * time.Hour} {
		if got, err := mapping.Rate(expr); err != nil || got != want {
			t.Errorf("Rate(%q) = %v, %v; want %v", expr, got, err, want)
		}
	}
	for _, bad := range []string{"rate(1 minutes)", "rate(2 minute)", "rate(0 minutes)", "cron(* * * * ? *)", ""} {
		if _, err := mapping.Rate(bad); err == nil {
			t.Errorf("Rate(%q) accepted", bad)
		}
	}
}
