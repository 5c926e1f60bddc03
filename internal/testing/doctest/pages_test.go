package doctest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testing/doctest"
)

// read returns the root, the pages in reading order and their texts.
func read(t *testing.T) (string, []string, map[string]string) {
	t.Helper()
	root, pages, err := doctest.Load()
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	texts := map[string]string{}
	for _, p := range pages {
		paths = append(paths, p.Path)
		texts[p.Path] = p.Text
	}
	return root, paths, texts
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

// TestCitedTestsExist: every test a page names in backticks, as the
// evidence of what a sentence says, is a test function of the module, so
// that a renamed or removed test cannot leave a claim without its test.
func TestCitedTestsExist(t *testing.T) {
	root, paths, texts := read(t)
	tests := testNames(t, root)
	cited := regexp.MustCompile("`(Test[A-Z]\\w*)`")
	n := 0
	for _, p := range paths {
		for _, m := range cited.FindAllStringSubmatch(texts[p], -1) {
			if m[1] == "TestMain" {
				continue // the convention, not a test
			}
			n++
			if !tests[m[1]] {
				t.Errorf("%s cites %s, which no test file declares", p, m[1])
			}
		}
	}
	if n < 50 {
		t.Errorf("only %d tests cited in the docs", n)
	}
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
			where := p + ":" + strconv.Itoa(b.Line)
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
	scheme := regexp.MustCompile(`^[a-z]+:`)
	n := 0
	for _, p := range pages {
		text := texts[p]
		for _, b := range doctest.Blocks(p, text) {
			text = strings.Replace(text, b.Text, "", 1)
		}
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if scheme.MatchString(target) {
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
// declared in the package it names (a package-level name, or a method or
// field of one of its types).
func TestLimitsAreNamedConstants(t *testing.T) {
	root, _, texts := read(t)
	section, ok := doctest.Section(texts["docs/configuration.md"], "## Limits")
	if !ok {
		t.Fatal(`docs/configuration.md has no "## Limits"`)
	}
	dirs := map[string]string{} // package folder name → its path
	err := filepath.WalkDir(filepath.Join(root, "internal"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && d.Name() != "testdata" {
			dirs[d.Name()] = path
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile("`([a-z]+)\\.([A-Za-z]\\w*)(?:\\.(\\w+))?`")
	declared := map[string]map[string]bool{}
	n := 0
	for _, m := range ref.FindAllStringSubmatch(section, -1) {
		pkg, name := m[1], m[2]
		if m[3] != "" {
			name = m[3] // a method or field: Policy.LeaseFor
		}
		dir, ok := dirs[pkg]
		if !ok {
			continue // not a package: function.name, context.metadata
		}
		n++
		if declared[pkg] == nil {
			declared[pkg] = packageNames(t, dir)
		}
		if !declared[pkg][name] {
			t.Errorf("the limits table names %s.%s, which %s does not declare", pkg, name, dir)
		}
	}
	if n < 30 {
		t.Errorf("only %d constants named in the limits table", n)
	}
}

// packageNames returns the package-level names declared in dir's Go files
// (tests left out), methods and struct fields included.
func packageNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				names[d.Name.Name] = true
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.ValueSpec:
						for _, id := range s.Names {
							names[id.Name] = true
						}
					case *ast.TypeSpec:
						names[s.Name.Name] = true
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, f := range st.Fields.List {
								for _, id := range f.Names {
									names[id.Name] = true
								}
							}
						}
					}
				}
			}
		}
	}
	return names
}

// TestQuotedVersionsArePinned: every version the pages quote for a tool the
// repository pins is the pinned one (the SAM CLI, cfn-lint and the SAM
// translator it brings, checkov, dynoxide's crate and what its binary
// reports, the Go toolchain), and the deploy page quotes those that
// `sam validate --lint` runs.
func TestQuotedVersionsArePinned(t *testing.T) {
	root, pages, texts := read(t)
	file := func(rel string) string {
		raw, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(raw)
	}
	pin := func(text, pattern, what string) string {
		m := regexp.MustCompile(pattern).FindStringSubmatch(text)
		if m == nil {
			t.Fatalf("no pin of %s (%s)", what, pattern)
		}
		return m[1]
	}
	sam, checkov, makefile := file(".ci/sam-requirements.txt"), file(".ci/checkov-requirements.txt"), file("Makefile")
	pinned := map[string]string{
		"aws-sam-cli":        pin(sam, `(?m)^aws-sam-cli==(\S+)`, "aws-sam-cli"),
		"cfn-lint":           pin(sam, `(?m)^cfn-lint==(\S+)`, "cfn-lint"),
		"aws-sam-translator": pin(sam, `(?m)^aws-sam-translator==(\S+)`, "aws-sam-translator"),
		"checkov":            pin(checkov, `(?m)^checkov==(\S+)`, "checkov"),
		"dynoxide-rs":        pin(makefile, `(?m)^DYNOXIDE_VERSION\s*:=\s*(\S+)`, "dynoxide's crate"),
		"dynoxide":           pin(makefile, `(?m)^DYNOXIDE_REPORTS\s*:=\s*dynoxide (\S+)`, "what dynoxide reports"),
		"go":                 strings.TrimPrefix(pin(makefile, `(?m)^export GOTOOLCHAIN\s*:=\s*(\S+)`, "the Go toolchain"), "go"),
	}
	quoted := regexp.MustCompile("`?(aws-sam-cli|cfn-lint|aws-sam-translator|checkov|dynoxide-rs|dynoxide)`?[ \n]+v?([0-9]+\\.[0-9]+(?:\\.[0-9]+)?)\\b|\\bgo(1\\.[0-9]+\\.[0-9]+)")
	n := 0
	for _, p := range pages {
		for _, m := range quoted.FindAllStringSubmatch(texts[p], -1) {
			name, version := m[1], m[2]
			if m[3] != "" {
				name, version = "go", m[3]
				if version == "1.26.8" {
					continue // the machine's Go, which vulncheck-selftest shows vulnerable
				}
			}
			n++
			if version != pinned[name] {
				t.Errorf("%s quotes %s %s; the repository pins %s", p, name, version, pinned[name])
			}
		}
	}
	deploy := strings.Join(strings.Fields(texts["docs/deploy.md"]), " ")
	for _, name := range []string{"aws-sam-cli", "cfn-lint", "aws-sam-translator"} {
		if !strings.Contains(deploy, name+" "+pinned[name]) {
			t.Errorf("docs/deploy.md does not say that sam validate --lint runs %s %s", name, pinned[name])
		}
	}
	if n < 8 {
		t.Errorf("only %d quoted versions found", n)
	}
}

// TestAWSCLIBlocksSetBothRegions: a shell block that runs the AWS CLI and
// sets the region sets both variables the CLI's versions read: version 1
// (botocore) reads only AWS_DEFAULT_REGION, version 2 AWS_REGION as well.
func TestAWSCLIBlocksSetBothRegions(t *testing.T) {
	_, pages, texts := read(t)
	runsCLI := regexp.MustCompile(`(?m)(^|[\s;|&(])aws [a-z]`)
	n := 0
	for _, p := range pages {
		for _, b := range doctest.Blocks(p, texts[p]) {
			if b.Lang != "sh" || !runsCLI.MatchString(b.Text) || !strings.Contains(b.Text, "AWS_REGION=") {
				continue
			}
			n++
			if !strings.Contains(b.Text, "AWS_DEFAULT_REGION=") {
				t.Errorf("%s:%d runs the AWS CLI with AWS_REGION but not AWS_DEFAULT_REGION, which the CLI's version 1 reads instead", p, b.Line)
			}
		}
	}
	if n == 0 {
		t.Error("no block runs the AWS CLI with a region: the README's local scan should")
	}
}

// TestNoEmbeddedStore: the pages never call the local store "embedded":
// it is dynoxide, a child process that make run and the tests start, and a
// reader who looks for it in the server's process would not find it.
func TestNoEmbeddedStore(t *testing.T) {
	_, pages, texts := read(t)
	for _, p := range pages {
		text := strings.Join(strings.Fields(strings.ToLower(texts[p])), " ")
		for _, s := range []string{"embedded store", "embedded one", "embedded dynamodb"} {
			if n := strings.Count(text, s); n > 0 {
				t.Errorf("%s says %q %d time(s): the local store is dynoxide, a child process", p, s, n)
			}
		}
	}
}

// TestFirstDeployCountsItsSteps: the first deploy says how many steps it
// has, and so does the README, and that is the number of its sections.
func TestFirstDeployCountsItsSteps(t *testing.T) {
	_, _, texts := read(t)
	section, ok := doctest.Section(texts["docs/deploy.md"], "## First deploy")
	if !ok {
		t.Fatal(`docs/deploy.md has no "## First deploy"`)
	}
	steps := 0
	for _, b := range strings.Split(section, "\n") {
		if strings.HasPrefix(b, "### ") {
			steps++
		}
	}
	words := []string{"no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"}
	if steps >= len(words) {
		t.Fatalf("the first deploy has %d steps", steps)
	}
	for page, text := range map[string]string{"docs/deploy.md": section, "README.md": texts["README.md"]} {
		if !strings.Contains(strings.ToLower(strings.Join(strings.Fields(text), " ")), words[steps]+" steps") {
			t.Errorf("%s does not say that the first deploy is %s steps", page, words[steps])
		}
	}
}

// TestNoTimingPromises: a page gives a duration it measured, with the
// figure, never a bound it cannot hold ("under a minute" took 61.5 s on a
// cold machine).
func TestNoTimingPromises(t *testing.T) {
	_, pages, texts := read(t)
	bound := regexp.MustCompile(`(?i)\b(under|less than|within) (a|one) (minute|second)\b`)
	for _, p := range pages {
		for _, m := range bound.FindAllString(texts[p], -1) {
			t.Errorf("%s promises %q: give the measured time instead", p, m)
		}
	}
}
