// Package doctest reads the documentation pages (README.md, docs/*.md,
// SECURITY.md) for the tests that hold them to the code: sections by
// heading, code blocks with the marker that says how each is checked, and
// the anchors GitHub makes of the headings.
package doctest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Markers a shell block carries, in an HTML comment on the line before its
// fence: <!-- doc: KIND [ARG] -->.
const (
	// MarkRun: TestDocCommands runs it as written, against the server of
	// the latest MarkServer block of its page (make run without one).
	MarkRun = "run"
	// MarkServer: a make run command; TestDocCommands starts it.
	MarkServer = "server"
	// MarkTestedBy: the named test runs it (ARG is the test's name).
	MarkTestedBy = "tested-by"
	// MarkTarget: a make target that is a test or measurement run itself
	// (make test is what CI runs).
	MarkTarget = "target"
	// MarkNeeds: it needs what cannot run here (ARG: aws, aws-cli, docker
	// or sam-docker): an AWS account, the AWS CLI, Docker.
	MarkNeeds = "needs"
)

// Needs lists what a MarkNeeds block may need.
var Needs = []string{"aws", "aws-cli", "docker"}

// Root returns the repository's root: the nearest folder above the working
// directory that holds go.mod.
func Root() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", fmt.Errorf("doctest: no go.mod above %s", dir)
		}
		dir = up
	}
}

// Pages returns the documentation pages, relative to the root, in reading
// order: README.md, the docs/ pages by name, SECURITY.md.
func Pages(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(docs)
	pages := []string{"README.md"}
	for _, d := range docs {
		pages = append(pages, filepath.ToSlash(filepath.Join("docs", filepath.Base(d))))
	}
	return append(pages, "SECURITY.md"), nil
}

// Page is one documentation page: its path relative to the root, and its
// text.
type Page struct {
	Path, Text string
}

// Load returns the root and its pages (Pages), read.
func Load() (root string, pages []Page, err error) {
	if root, err = Root(); err != nil {
		return "", nil, err
	}
	paths, err := Pages(root)
	if err != nil {
		return "", nil, err
	}
	for _, p := range paths {
		raw, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			return "", nil, err
		}
		pages = append(pages, Page{Path: p, Text: string(raw)})
	}
	return root, pages, nil
}

// Section returns the text of page from the heading line (such as
// "## Layout") up to the next heading of the same level or a higher one.
func Section(text, heading string) (string, bool) {
	level := strings.IndexByte(heading, ' ')
	lines := strings.Split(text, "\n")
	inBlock := false
	start := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "```") {
			inBlock = !inBlock
		}
		if inBlock {
			continue
		}
		if start < 0 {
			if l == heading {
				start = i
			}
			continue
		}
		if n := headingLevel(l); n > 0 && n <= level {
			return strings.Join(lines[start:i], "\n"), true
		}
	}
	if start < 0 {
		return "", false
	}
	return strings.Join(lines[start:], "\n"), true
}

func headingLevel(l string) int {
	n := 0
	for n < len(l) && l[n] == '#' {
		n++
	}
	if n == 0 || n >= len(l) || l[n] != ' ' {
		return 0
	}
	return n
}

// Block is one fenced code block of a page.
type Block struct {
	Page string
	// Line is the line number of its opening fence.
	Line int
	// Heading is the nearest heading above it.
	Heading string
	Lang    string
	// Mark and Arg are its marker's kind and argument, if it has one.
	Mark, Arg string
	Text      string
	// Output is the text of the json or text block that follows it with
	// only blank lines between: what it prints.
	Output string
	// HasOutput says whether such a block follows.
	HasOutput bool

	end int // the index of its closing fence's line
}

var marker = regexp.MustCompile(`^<!-- doc: ([a-z-]+)(?: (\S+))? -->$`)

// Blocks returns the code blocks of a page's text.
func Blocks(page, text string) []Block {
	lines := strings.Split(text, "\n")
	var out []Block
	heading := ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if headingLevel(l) > 0 {
			heading = l
			continue
		}
		if !strings.HasPrefix(l, "```") {
			continue
		}
		b := Block{Page: page, Line: i + 1, Heading: heading, Lang: strings.TrimPrefix(l, "```")}
		if i > 0 {
			if m := marker.FindStringSubmatch(lines[i-1]); m != nil {
				b.Mark, b.Arg = m[1], m[2]
			}
		}
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(lines[j], "```") {
			j++
		}
		b.Text = strings.Join(lines[i+1:min(j, len(lines))], "\n")
		b.end = j
		out = append(out, b)
		i = j
	}
	for k := 0; k+1 < len(out); k++ {
		next := out[k+1]
		if next.Lang != "json" && next.Lang != "text" || next.Mark != "" {
			continue
		}
		gap := lines[min(out[k].end+1, next.Line-1) : next.Line-1]
		if strings.TrimSpace(strings.Join(gap, "")) == "" {
			out[k].Output, out[k].HasOutput = next.Text, true
		}
	}
	return out
}

var slugDrop = regexp.MustCompile(`[^\p{L}\p{N}_\- ]`)

// Anchors returns the anchors GitHub makes of a page's headings: lower
// case, punctuation dropped, spaces made hyphens, a repeat numbered.
func Anchors(text string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inBlock := false
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, "```") {
			inBlock = !inBlock
		}
		n := headingLevel(l)
		if inBlock || n == 0 {
			continue
		}
		s := strings.ReplaceAll(slugDrop.ReplaceAllString(strings.ToLower(strings.TrimSpace(l[n:])), ""), " ", "-")
		if k, ok := seen[s]; ok {
			seen[s] = k + 1
			s = fmt.Sprintf("%s-%d", s, k+1)
		} else {
			seen[s] = 0
		}
		out[s] = true
	}
	return out
}
