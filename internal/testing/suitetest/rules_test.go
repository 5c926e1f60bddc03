package suitetest

// The two rules every test binary of the module keeps, checked over the
// source: randomized tests take their seed from this package, and every
// test binary fails when a goroutine outlives its tests (go.uber.org/goleak
// in TestMain). docs/development.md ("Tests") states both.

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
)

// moduleRoot is the directory holding go.mod, above this package.
func moduleRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// testFile is one parsed _test.go file of the module.
type testFile struct {
	rel     string // path from the module root
	file    *ast.File
	imports map[string]string // local name -> import path
}

// testFiles parses every _test.go file of the module, outside testdata,
// hidden folders and node_modules.
func testFiles(t *testing.T) []testFile {
	t.Helper()
	root := moduleRoot(t)
	fset := token.NewFileSet()
	var out []testFile
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		tf := testFile{rel: filepath.ToSlash(rel), file: f, imports: map[string]string{}}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			name := p[strings.LastIndexByte(p, '/')+1:]
			if p == "math/rand/v2" {
				name = "rand"
			}
			if imp.Name != nil {
				name = imp.Name.Name
			}
			tf.imports[name] = p
		}
		out = append(out, tf)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) < 20 {
		t.Fatalf("found only %d test files under %s", len(out), root)
	}
	return out
}

// calledFrom returns the import path and name of a call's function when it
// is a package-level function of an imported package.
func (tf testFile) calledFrom(call *ast.CallExpr) (pkg, name string) {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return "", ""
	}
	return tf.imports[id.Name], sel.Sel.Name
}

// clockReading returns "UnixNano" or "UnixMicro" when call is
// time.Now().UnixNano() or time.Now().UnixMicro(): the clock readings tests
// have used as seeds.
func (tf testFile) clockReading(call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || (sel.Sel.Name != "UnixNano" && sel.Sel.Name != "UnixMicro") {
		return ""
	}
	now, ok := sel.X.(*ast.CallExpr)
	if !ok {
		return ""
	}
	if pkg, name := tf.calledFrom(now); pkg != "time" || name != "Now" {
		return ""
	}
	return sel.Sel.Name
}

// seededConstructors are the math/rand functions that take a seed rather
// than use the package's own, unseeded generator.
var seededConstructors = []string{"New", "NewPCG", "NewChaCha8", "NewSource", "NewZipf"}

// TestRandomTestsTakeTheSuiteSeed finds, in every test file, the ways a
// test can be random without a seed anyone can replay: rapid.Check (its
// seed is its own; suitetest.Check seeds it), math/rand's package-level
// generator, and a clock reading used as a seed.
func TestRandomTestsTakeTheSuiteSeed(t *testing.T) {
	var bad []string
	for _, tf := range testFiles(t) {
		if strings.HasPrefix(tf.rel, "internal/testing/suitetest/") {
			continue
		}
		ast.Inspect(tf.file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			pkg, name := tf.calledFrom(call)
			switch {
			case pkg == "pgregory.net/rapid" && name == "Check":
				bad = append(bad, tf.rel+": rapid.Check; use suitetest.Check, which seeds rapid from "+EnvSeed)
			case (pkg == "math/rand" || pkg == "math/rand/v2") && !slices.Contains(seededConstructors, name):
				bad = append(bad, tf.rel+": rand."+name+" draws from an unseeded generator; use suitetest.Rand")
			case tf.clockReading(call) != "":
				bad = append(bad, tf.rel+": time.Now()."+tf.clockReading(call)+"() is not a seed anyone can replay; use suitetest.Seed")
			}
			return true
		})
	}
	for _, b := range bad {
		t.Error(b)
	}
}

// TestEveryTestBinaryChecksForLeaks finds every package with tests and
// checks that its TestMain runs go.uber.org/goleak after the tests, so that
// a goroutine left running (a server, a connection, a retry) fails the
// package.
func TestEveryTestBinaryChecksForLeaks(t *testing.T) {
	guarded := map[string]bool{}
	for _, tf := range testFiles(t) {
		dir := filepath.Dir(tf.rel)
		if _, seen := guarded[dir]; !seen {
			guarded[dir] = false
		}
		for _, d := range tf.file.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != "TestMain" || fn.Body == nil {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if call, ok := n.(*ast.CallExpr); ok {
					if pkg, name := tf.calledFrom(call); pkg == "go.uber.org/goleak" && (name == "VerifyTestMain" || name == "Find") {
						guarded[dir] = true
					}
				}
				return true
			})
		}
	}
	var missing []string
	for dir, ok := range guarded {
		if !ok {
			missing = append(missing, dir)
		}
	}
	slices.Sort(missing)
	for _, dir := range missing {
		t.Errorf("%s: no TestMain running goleak.VerifyTestMain (or goleak.Find) after its tests", dir)
	}
	t.Logf("%d test packages, %d without a leak check", len(guarded), len(missing))
}

// TestReadmeNamesThePackagesWithoutLeakCheck compares the packages docs/development.md
// says have no test binary (so no leak check) with the packages of the
// module that have Go files but no tests.
func TestReadmeNamesThePackagesWithoutLeakCheck(t *testing.T) {
	root := moduleRoot(t)
	code, tests := map[string]bool{}, map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != root && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		code[filepath.ToSlash(rel)] = true
		if strings.HasSuffix(name, "_test.go") {
			tests[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var untested []string
	for dir := range code {
		if !tests[dir] {
			untested = append(untested, dir)
		}
	}
	slices.Sort(untested)

	readme, err := os.ReadFile(filepath.Join(root, "docs", "development.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	start := strings.Index(text, "**Leaks fail.**")
	end := strings.Index(text[max(start, 0):], "\n\n")
	if start < 0 || end < 0 {
		t.Fatal(`docs/development.md has no "**Leaks fail.**" paragraph`)
	}
	paragraph := text[start : start+end]
	list := paragraph[strings.Index(paragraph, "no\ntest binary to check:")+1:]
	list = list[:strings.Index(list, "`internal/testing/suitetest`")]
	list = regexp.MustCompile(`\([^)]*\)`).ReplaceAllString(list, "") // what runs them, not a package without tests
	var named []string
	for _, f := range strings.Split(list, "`")[1:] {
		if !strings.ContainsAny(f, " ,.()\n") {
			named = append(named, f)
		}
	}
	named = slices.Compact(slices.Sorted(slices.Values(named)))
	if !slices.Equal(named, untested) {
		t.Errorf("docs/development.md names %q as the packages without tests; they are %q", named, untested)
	}
}
