package loadtest_test

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/oncecall/oncecall/internal/bench/loadtest"
)

// moment is the one part of a planned body that comes from the clock.
var moment = regexp.MustCompile(`"moment":"[^"]*"`)

// TestPlanIsDecidedBySeedAlone plans one run several times from one seed:
// the same calls in the same order, each body the same but for its moment,
// so that a run's seed replays it. Another seed plans another run.
func TestPlanIsDecidedBySeedAlone(t *testing.T) {
	plan := func(seed uint64) []loadtest.Call {
		t.Helper()
		calls, err := loadtest.Mixed(loadtest.Plan{Calls: 300, Ops: 40, Prefix: "p", Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		for i := range calls {
			calls[i].Body = moment.ReplaceAll(calls[i].Body, []byte(`"moment":""`))
		}
		return calls
	}
	same := func(a, b []loadtest.Call) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if a[i].Op != b[i].Op || !bytes.Equal(a[i].Body, b[i].Body) {
				return false
			}
		}
		return true
	}
	first := plan(42)
	for range 5 {
		if again := plan(42); !same(first, again) {
			t.Fatal("one seed planned two runs")
		}
	}
	if same(first, plan(43)) {
		t.Fatal("another seed planned the same run")
	}
	// Identical varies the member order from call to call, the same way
	// every time.
	args := map[string]any{"title": "t", "priority": "high", "tags": []any{"a"}, "description": "d"}
	a, b := loadtest.Identical(4, "user-a", "r", args), loadtest.Identical(4, "user-a", "r", args)
	for i := range a {
		if !bytes.Equal(moment.ReplaceAll(a[i].Body, nil), moment.ReplaceAll(b[i].Body, nil)) {
			t.Fatalf("call %d of Identical differs between two plans:\n%s\n%s", i, a[i].Body, b[i].Body)
		}
	}
}
