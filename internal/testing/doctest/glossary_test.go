package doctest_test

import (
	"path"
	"regexp"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testing/doctest"
)

// firstUse is a word a page uses, which its first use there links to the
// glossary's entry (anchor in docs/glossary.md). Word is a regular
// expression, matched without regard to case, at a word's start, a space
// in it matching any white space (a line break too).
type firstUse struct {
	page, word, anchor string
}

// firstUses are the words a newcomer met before they were explained, on
// the page where it happened.
var firstUses = []firstUse{
	{"README.md", "function sources?", "function-source"},
	{"README.md", "destinations?", "destination"},
	{"README.md", "outbox", "outbox"},
	{"README.md", "`request` policy", "policy"},
	{"README.md", "AI gateway", "ai-gateway"},
	{"docs/destinations.md", "sweep", "sweep"},
	{"docs/destinations.md", "attempt budget", "attempt-budget"},
	{"docs/destinations.md", "settle delay", "settle-delay"},
	{"docs/destinations.md", "DESTINATION_REQUEST_HORIZON", "request-horizon"},
	{"docs/runbook.md", "lease", "lease"},
	{"docs/runbook.md", "`?attention(_by_shard` index| index)", "attention"},
	{"docs/runbook.md", "decision role", "decision-role"},
	{"docs/runbook.md", "audit key", "audit-key"},
	{"docs/troubleshooting.md", `retir\w* the running (execution )?environments`, "retiring-the-running-environments"},
	{"docs/connect-aivax.md", "McpTokenSecretArn", "mcptokensecretarn"},
	{"docs/connect-aivax.md", "AI gateway", "ai-gateway"},
	{"docs/connect-aivax.md", "function sources?", "function-source"},
	{"docs/mcp.md", "2026-07-28", "2026-07-28"},
	{"docs/mcp.md", "server/discover", "serverdiscover"},
	{"docs/mcp.md", "ttlMs", "ttlms"},
}

// prose returns a page's text with its code blocks and headings blanked
// (same length, so offsets stay), and HTML comments left as they are.
func prose(text string) string {
	b := []byte(text)
	blank := func(from, to int) {
		for i := from; i < to; i++ {
			if b[i] != '\n' {
				b[i] = ' '
			}
		}
	}
	in := false
	off := 0
	for _, l := range strings.SplitAfter(text, "\n") {
		fence := strings.HasPrefix(l, "```")
		if fence || in || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "    ") {
			blank(off, off+len(l))
		}
		if fence {
			in = !in
		}
		off += len(l)
	}
	return string(b)
}

var mdLink = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]+)\)`)

// TestGlossaryLinks: on each page of firstUses, the word's first use in
// prose (code blocks and headings aside) is the text of a link to its
// glossary entry, and every link to the glossary, from any page, names an
// entry it has.
func TestGlossaryLinks(t *testing.T) {
	_, pages, texts := read(t)
	glossary, ok := texts["docs/glossary.md"]
	if !ok {
		t.Fatal("there is no docs/glossary.md")
	}
	anchors := doctest.Anchors(glossary)
	for _, u := range firstUses {
		if !anchors[u.anchor] {
			t.Errorf("docs/glossary.md has no entry #%s for %q", u.anchor, u.word)
		}
		text, ok := texts[u.page]
		if !ok {
			t.Errorf("%s is not a page", u.page)
			continue
		}
		p := prose(text)
		loc := regexp.MustCompile(`(?i)(^|[^\w-])(` + strings.ReplaceAll(u.word, " ", `\s+`) + `)`).FindStringSubmatchIndex(p)
		if loc == nil {
			t.Errorf("%s does not use %q: take it out of firstUses", u.page, u.word)
			continue
		}
		at := loc[4]
		linked := false
		for _, m := range mdLink.FindAllStringSubmatchIndex(p, -1) {
			if m[2] <= at && at < m[3] {
				linked = glossaryTarget(u.page, p[m[4]:m[5]]) == u.anchor
				break
			}
		}
		if !linked {
			line := strings.Count(text[:at], "\n") + 1
			t.Errorf("%s:%d: the first use of %q is not a link to the glossary: make it [%s](%s#%s) or explain it there",
				u.page, line, text[loc[4]:loc[5]], text[loc[4]:loc[5]], rel(u.page), u.anchor)
		}
	}
	n := 0
	for _, pg := range pages {
		for _, m := range mdLink.FindAllStringSubmatch(prose(texts[pg]), -1) {
			a := glossaryTarget(pg, m[2])
			if a == "-" || a == "" {
				continue
			}
			n++
			if !anchors[a] {
				t.Errorf("%s links to %s: the glossary has no entry #%s", pg, m[2], a)
			}
		}
	}
	if n < len(firstUses) {
		t.Errorf("only %d links to the glossary, fewer than the %d first uses", n, len(firstUses))
	}
}

// glossaryTarget returns the anchor a link from page names in
// docs/glossary.md ("" for the page itself), or "-" when it leads
// elsewhere.
func glossaryTarget(page, target string) string {
	file, anchor, _ := strings.Cut(target, "#")
	if file == "" || path.Clean(path.Join(path.Dir(page), file)) != "docs/glossary.md" {
		return "-"
	}
	return anchor
}

// rel is the glossary's path as page links to it.
func rel(page string) string {
	if strings.HasPrefix(page, "docs/") {
		return "glossary.md"
	}
	return "docs/glossary.md"
}
