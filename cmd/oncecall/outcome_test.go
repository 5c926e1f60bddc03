package main

import (
	"strings"
	"testing"
)

// TestOutcomeKey: OUTCOME_KEY when given and fit, refused with what to do
// when short or not visible ASCII, and a new random key per run without
// it.
func TestOutcomeKey(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == EnvOutcomeKey {
				return v
			}
			return ""
		}
	}
	if k, err := outcomeKey(env("doc-outcome-key-0123456789abcdef")); err != nil || k != "doc-outcome-key-0123456789abcdef" {
		t.Errorf("given key: %q %v", k, err)
	}
	for _, bad := range []string{"short", "has a space in it 0123456789"} {
		if _, err := outcomeKey(env(bad)); err == nil || !strings.Contains(err.Error(), "at least 16 visible ASCII") {
			t.Errorf("OUTCOME_KEY %q: %v", bad, err)
		}
	}
	a, errA := outcomeKey(env(""))
	b, errB := outcomeKey(env(""))
	if errA != nil || errB != nil || len(a) < minOutcomeKey || a == b {
		t.Errorf("random keys %q %q (%v %v): want two different keys of at least %d bytes", a, b, errA, errB, minOutcomeKey)
	}
}
