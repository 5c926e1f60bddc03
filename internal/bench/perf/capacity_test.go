package perf

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/dynamo"
)

// TestCapacityIsMeasuredFromAnswers runs the capacity part's oncecall rows
// (the peer needs Node and its packages; the front's handling of a request
// that does not ask is TestFrontSumsCapacityAndAsksForIt's) and checks what
// the report relies on: every figure comes from the answers, oncecall's
// requests all asked themselves, and the units follow what each call wrote.
func TestCapacityIsMeasuredFromAnswers(t *testing.T) {
	r, err := capacity(context.Background(), Options{}, 2, false)
	if err != nil {
		t.Fatal(err)
	}
	row := func(side, call string) CapacityRow {
		t.Helper()
		for _, exact := range []bool{true, false} {
			for _, x := range r.Rows {
				if x.Side == side && (x.Call == call || !exact && strings.HasPrefix(x.Call, call)) {
					return x
				}
			}
		}
		t.Fatalf("no row %q of %q in %d rows", call, side, len(r.Rows))
		return CapacityRow{}
	}
	for _, x := range r.Rows {
		if x.Added != 0 {
			t.Errorf("%s, %s: the front had to ask for capacity on %d requests", x.Side, x.Call, x.Added)
		}
		if Total(x.Requests) == 0 || x.Total().Requests != Total(x.Requests) {
			t.Errorf("%s, %s: %d requests, %d answers summed", x.Side, x.Call, Total(x.Requests), x.Total().Requests)
		}
	}
	const plain, dest, inline = "oncecall, no destination", "oncecall, webhook destination", "oncecall, webhook destination, inline first attempt"
	created := row(plain, "create_ticket, created")
	if c := created.Total(); c.Reported != c.Requests || c.Total().Write <= 0 || c.Index().Write <= 0 || c.Table.Read != float64(created.Calls) {
		t.Errorf("created call: %+v, want write units for the table and the lookup index from every answer, and one read unit per call (the user's record)", c)
	}
	if c := row(plain, "create_ticket, replay").Units["TransactWriteItems"]; c.Reported != 0 || c.Total().Write != 0 {
		t.Errorf("replay's transactions: %+v, want answers without capacity and no write units", c)
	}
	if c := row(plain, "get_ticket").Total(); c.Total().Read <= 0 || c.Total().Write != 0 {
		t.Errorf("get_ticket: %+v, want read units only", c)
	}
	withDest := row(dest, "create_ticket, created").Total().Total().Write
	if withDest < created.Total().Total().Write {
		t.Errorf("created call with a destination: %v write units, fewer than without (%v)", withDest, created.Total().Total().Write)
	}
	first := row(dest, "delivery attempt, first").Total()
	if first.Total().Write <= 0 || first.Reported != first.Requests {
		t.Errorf("first delivery attempt: %+v, want write units from every answer", first)
	}
	if c := row(dest, "delivery attempt, the same stream record").Total(); c.Reported != 0 || c.Total().Write != 0 {
		t.Errorf("refused lease: %+v, want one answer without capacity", c)
	}
	if c := row(dest, "delivery attempt, helpdesk answers 503").Total(); c.Indexes[dynamo.AttentionIndex].Write <= 0 || c.Indexes[dynamo.LegacyAttentionIndex].Write != 0 {
		t.Errorf("scheduled retry: %+v, want a write of %s and none of %s", c, dynamo.AttentionIndex, dynamo.LegacyAttentionIndex)
	}
	if got := row(inline, "create_ticket, created and delivered").Total().Total().Write; got <= withDest {
		t.Errorf("created and delivered inline: %v write units, want more than created alone (%v)", got, withDest)
	}
	for _, call := range []string{"user add", "user disable", "user delete", "user list", "find -ticket", "find -op", "find -tenant", "delivery list", "delivery settle", "delivery recover"} {
		if c := row("oncecall-admin", call).Total(); c.Reported != c.Requests || c.Total() == (dynamo.Units{}) {
			t.Errorf("%s: %+v, want units from every answer", call, c)
		}
	}
	var targets strings.Builder
	if err := capacityTargets(&targets, r.Rows); err != nil || strings.Count(targets.String(), "|yes-->") != 2 {
		t.Errorf("capacity targets (%v):\n%s", err, targets.String())
	}
	table := CapacityTable(r.Rows)
	if n := strings.Count(table, "\n"); n != len(r.Rows)+2 {
		t.Errorf("the table has %d lines for %d rows:\n%s", n, len(r.Rows), table)
	}
}

// TestSpliceReplacesOnlyItsSection checks -update: a part's new section
// replaces its old one and nothing else, and a section the report lacks is
// added before the failed-parts line.
func TestSpliceReplacesOnlyItsSection(t *testing.T) {
	doc := "# r\n\n## A\n\nold a\n\n## B\n\nold b\n\n**Failed parts:** x.\n"
	got := splice(doc, "## A\n\nnew a\n\n")
	if want := "# r\n\n## A\n\nnew a\n\n## B\n\nold b\n\n**Failed parts:** x.\n"; got != want {
		t.Errorf("replacing A:\n%q\nwant\n%q", got, want)
	}
	got = splice(got, "## B\n\nnew b\n\n")
	if want := "# r\n\n## A\n\nnew a\n\n## B\n\nnew b\n\n**Failed parts:** x.\n"; got != want {
		t.Errorf("replacing B, the last:\n%q\nwant\n%q", got, want)
	}
	got = splice(got, "## C\n\nc\n\n")
	if want := "# r\n\n## A\n\nnew a\n\n## B\n\nnew b\n\n## C\n\nc\n\n**Failed parts:** x.\n"; got != want {
		t.Errorf("adding C:\n%q\nwant\n%q", got, want)
	}
	note := updated("## C\n\nc\n", Options{Command: "cmd"}, time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC))
	if !strings.HasPrefix(note, "## C\n\n_This section was written by `cmd` on 2026-12-01 20:00 UTC") || !strings.HasSuffix(note, "\nc\n") {
		t.Errorf("updated: %q", note)
	}
}

// TestRetargetSummarizesEverySection checks -update's targets table: it is
// rebuilt from the markers of the sections as they now are, a spliced
// section's rows replacing the old ones.
func TestRetargetSummarizesEverySection(t *testing.T) {
	doc := "# r\n\n## Targets\n\n| Target | Measured | Goal | Met |\n|---|---|---|---|\n| a | 1 | ≤ 2 | yes |\n| b | 9 | ≤ 5 | **no** |\n\n## A\n\n<!--target|a|1|≤ 2|yes-->\n\n## B\n\n<!--target|b|9|≤ 5|**no**-->\n"
	doc = splice(doc, "## B\n\n<!--target|b|4|≤ 5|yes-->\n<!--target|c|0|0|yes-->\n\n")
	got := retarget(doc)
	want := "# r\n\n## Targets\n\n| Target | Measured | Goal | Met |\n|---|---|---|---|\n| a | 1 | ≤ 2 | yes |\n| b | 4 | ≤ 5 | yes |\n| c | 0 | 0 | yes |\n\n## A\n\n"
	if !strings.HasPrefix(got, want) {
		t.Errorf("retarget:\n%q\nwant it to start\n%q", got, want)
	}
}
