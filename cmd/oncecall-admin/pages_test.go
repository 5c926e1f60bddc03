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

// TestPagesNameRealCommands: every "oncecall-admin WORD [WORD]" a page
// writes (its log lines' "oncecall-admin change" aside) names one of the
// tool's commands.
func TestPagesNameRealCommands(t *testing.T) {
	_, pages, err := doctest.Load()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, c := range commands {
		names[c.name] = true
	}
	use := regexp.MustCompile(`(?:^|[^"\w-])oncecall-admin\s+([a-z][a-z-]*)(?:\s+([a-z][a-z-]*))?`)
	n := 0
	for _, p := range pages {
		text := strings.ReplaceAll(p.Text, "bin/oncecall-admin", "oncecall-admin")
		for _, m := range use.FindAllStringSubmatch(text, -1) {
			n++
			if !names[m[1]] && !names[m[1]+" "+m[2]] {
				t.Errorf("%s names %q, which is no command of oncecall-admin", p.Path, strings.Join(strings.Fields(strings.TrimLeft(m[0], "`( [")), " "))
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d uses of oncecall-admin in the pages", n)
	}
}
