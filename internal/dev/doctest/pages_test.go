package doctest_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/dev/doctest"
)

// read returns the root and every page's text.
func read(t *testing.T) (string, []string, map[string]string) {
	t.Helper()
	root, err := doctest.Root()
	if err != nil {
		t.Fatal(err)
	}
	pages, err := doctest.Pages(root)
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{}
	for _, p := range pages {
		raw, err := os.ReadFile(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		texts[p] = string(raw)
	}
	return root, pages, texts
}

// testNames returns the names of every test function of the module.
func testNames(t *testing.T, root string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	re := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules") && path != root {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range re.FindAllStringSubmatch(string(raw), -1) {
			names[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

// TestShellBlocksSayHowTheyAreChecked: every shell block of the docs says,
// in its marker, whether a test runs it (TestDocCommands, or the test it
// names, which must exist), whether it is a make target that is itself a
// test or a measurement, or what it needs that cannot run here.
func TestShellBlocksSayHowTheyAreChecked(t *testing.T) {
	root, pages, texts := read(t)
	tests := testNames(t, root)
	n := 0
	for _, p := range pages {
		for _, b := range doctest.Blocks(p, texts[p]) {
			if b.Lang != "sh" {
				continue
			}
			n++
			where := p + ":" + itoa(b.Line)
			switch b.Mark {
			case doctest.MarkRun, doctest.MarkServer, doctest.MarkTarget:
			case doctest.MarkTestedBy:
				if !tests[b.Arg] {
					t.Errorf("%s: tested by %q, which is no test of this module", where, b.Arg)
				}
			case doctest.MarkNeeds:
				if !slices.Contains(doctest.Needs, b.Arg) {
					t.Errorf("%s: needs %q; say one of %v", where, b.Arg, doctest.Needs)
				}
			case "":
				t.Errorf("%s: a shell block without a marker: put <!-- doc: run -->, <!-- doc: tested-by TestName -->, <!-- doc: target --> or <!-- doc: needs aws|aws-cli|docker --> on the line before its fence", where)
			default:
				t.Errorf("%s: unknown marker %q", where, b.Mark)
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d shell blocks in the docs", n)
	}
}

func itoa(n int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(n))
}

func fmtInt(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for n > 0 {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
	}
	return string(b)
}

// TestLinksResolve: every relative link of the docs names a file that
// exists and, with an anchor, a heading that makes it.
func TestLinksResolve(t *testing.T) {
	root, pages, texts := read(t)
	anchors := map[string]map[string]bool{}
	for _, p := range pages {
		anchors[p] = doctest.Anchors(texts[p])
	}
	benchmarks, err := os.ReadFile(filepath.Join(root, "BENCHMARKS.md"))
	if err != nil {
		t.Fatal(err)
	}
	anchors["BENCHMARKS.md"] = doctest.Anchors(string(benchmarks))
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	n := 0
	for _, p := range pages {
		text := texts[p]
		for _, b := range doctest.Blocks(p, text) {
			text = strings.Replace(text, b.Text, "", 1)
		}
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
				continue
			}
			n++
			path, anchor, _ := strings.Cut(target, "#")
			file := p
			if path != "" {
				file = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(p), path)))
				if _, err := os.Stat(filepath.Join(root, file)); err != nil {
					t.Errorf("%s links to %s, which does not exist", p, target)
					continue
				}
			}
			if anchor == "" {
				continue
			}
			a, ok := anchors[file]
			if !ok {
				t.Errorf("%s links to %s: an anchor in a file that is not a page", p, target)
			} else if !a[anchor] {
				t.Errorf("%s links to %s: %s has no heading that makes #%s", p, target, file, anchor)
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d relative links in the docs", n)
	}
}

// TestLimitsAreNamedConstants: every constant the limits table names is
// declared in the package it names.
func TestLimitsAreNamedConstants(t *testing.T) {
	root, _, texts := read(t)
	section, ok := doctest.Section(texts["docs/configuration.md"], "## Limits")
	if !ok {
		t.Fatal(`docs/configuration.md has no "## Limits"`)
	}
	ref := regexp.MustCompile("`([a-z]+)\\.([A-Za-z]\\w*)(?:\\.(\\w+))?`")
	n := 0
	for _, m := range ref.FindAllStringSubmatch(section, -1) {
		pkg, name := m[1], m[2]
		if m[3] != "" {
			name = m[3] // a method: Policy.LeaseFor
		}
		dirs, _ := filepath.Glob(filepath.Join(root, "internal", pkg))
		if pkg == "httpsend" {
			dirs = []string{filepath.Join(root, "internal", "delivery", "httpsend")}
		}
		if len(dirs) == 0 {
			continue // not a package: function.name, context.metadata
		}
		n++
		decl := regexp.MustCompile(`(?m)(^\s*|\bconst |\bvar |\) )` + name + `\b`)
		found := false
		files, _ := filepath.Glob(filepath.Join(dirs[0], "*.go"))
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			raw, _ := os.ReadFile(f)
			if decl.Match(raw) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("the limits table names %s.%s, which internal/%s does not declare", pkg, name, pkg)
		}
	}
	if n < 30 {
		t.Errorf("only %d constants named in the limits table", n)
	}
}
