package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testing/doctest"
)

// TestTakingAccessAwaySaysNothingWaits: user disable, user revoke and
// user delete return once their write is done, as
// TestTakingAccessAwaySaysWhatHolds checks of the tool (no wait recorded),
// so no page and no command's summary says that they wait or return only
// once earlier calls are done.
func TestTakingAccessAwaySaysNothingWaits(t *testing.T) {
	_, pages, err := doctest.Load()
	if err != nil {
		t.Fatal(err)
	}
	waits := regexp.MustCompile(`(?i)\bwaits? \d+ ?(s|seconds)\b|returns once no call`)
	for _, p := range pages {
		for i, l := range strings.Split(p.Text, "\n") {
			if waits.MatchString(l) {
				t.Errorf("%s:%d says a change waits: %q", p.Path, i+1, strings.TrimSpace(l))
			}
		}
	}
	for _, c := range commands {
		if waits.MatchString(c.summary) {
			t.Errorf("%s's summary says it waits: %q", c.name, c.summary)
		}
	}
}
