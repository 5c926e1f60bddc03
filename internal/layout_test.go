// Package internal_test checks the layout docs/development.md's "Layout" section
// describes: what ships stands apart from the kits (the local stand-ins,
// the test helpers, the benchmarks) and imports nothing of them, and
// imports point inward only.
package internal_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/oncecall/oncecall/internal/callback"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const module = "github.com/oncecall/oncecall/"

// Rooms of the shipped code, innermost first. A package may import
// packages of its own room or of rooms before it, never after.
var rooms = []struct {
	name string
	pkgs []string
}{
	{"the AIVAX contract and the domain", []string{
		"internal/canonjson", "internal/nonce", "internal/protocol",
		"internal/schema", "internal/ticket", "internal/identity", "internal/idempotency",
	}},
	{"the flows: a callback, a delivery, an outcome read", []string{"internal/callback", "internal/delivery", "internal/outcome"}},
	{"the adapters: transports, event sources, the store, the destinations", []string{
		"internal/apigw", "internal/httpapi", "internal/mcp", "internal/stream", "internal/dynamo",
		"internal/delivery/httpsend", "internal/delivery/webhook", "internal/delivery/zendesk", "internal/delivery/rt",
		"internal/auditkms",
	}},
	{"the wiring", []string{"internal/config", "internal/secret", "internal/metrics", "internal/app", "internal/app/profile"}},
}

// The binaries that ship: the three Lambdas and the operator's tool, which
// people run against the deployed table.
var shippedBinaries = []string{"functions/callback", "functions/deliver", "functions/outcome", "cmd/oncecall-admin"}

// localServer is the one program under cmd/ that does not ship: the
// shipped packages served over the local store (make run), which may use
// the kits. Every other program of this repository sits in the kit tree of
// its kind (internal/local/cmd, internal/testing/cmd, internal/bench/cmd).
const localServer = "cmd/oncecall"

// The kits: the trees of what is never deployed, one kind each. A kit may
// import what ships and the kits of its own tree or of trees before it,
// never after: a stand-in knows no test helper or benchmark, a test helper
// no benchmark.
var kits = []struct{ tree, what string }{
	{"internal/local/", "stand-ins and emulators that run on this machine in place of AWS or a helpdesk"},
	{"internal/testing/", "test helpers, named like net/http/httptest, and the suites that drive the doors with real clients"},
	{"internal/bench/", "benchmarks and load runs"},
}

// kit returns the index in kits of the tree path is in, or -1.
func kit(path string) int {
	for i, k := range kits {
		if strings.HasPrefix(path, k.tree) {
			return i
		}
	}
	return -1
}

// ships reports whether path is shipped: a package of a room or a
// shipped binary.
func ships(path string) bool {
	return room(path) >= 0 || slices.Contains(shippedBinaries, path)
}

// Imports no room may make at all, by package.
var forbidden = map[string][]string{
	// Settings are parsed without the packages that use them.
	"internal/config": {"internal/callback", "internal/ticket", "internal/schema"},
	// The schema's helpers are its own, not the envelope's.
	"internal/schema": {"internal/protocol"},
}

type pkg struct {
	ImportPath string
	Name       string
	Doc        string
	Imports    []string
	Deps       []string
}

func list(t *testing.T) map[string]pkg {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = filepath.Join(runtime.GOROOT(), "bin", "go") //nolint:staticcheck // the go command that built this test
	}
	cmd := exec.Command(gobin, "list", "-json", "./...")
	cmd.Dir = ".."
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	pkgs := map[string]pkg{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs[strings.TrimPrefix(p.ImportPath, module)] = p
	}
	if len(pkgs) < 30 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	return pkgs
}

func ours(imports []string) []string {
	var out []string
	for _, i := range imports {
		if rel, ok := strings.CutPrefix(i, module); ok {
			out = append(out, rel)
		}
	}
	return out
}

func room(path string) int {
	for i, r := range rooms {
		if slices.Contains(r.pkgs, path) {
			return i
		}
	}
	return -1
}

// TestEveryPackageHasAPlace: every package of the module ships (a room's
// package or a shipped binary), is a kit (under one of the kit trees), or
// is the local server. A new package under internal/ must be placed, here
// and in docs/development.md's map, or go under the kit tree of its kind; a
// new program goes under cmd/ only if it ships; a new function under
// functions/ ships.
func TestEveryPackageHasAPlace(t *testing.T) {
	for path := range list(t) {
		switch {
		case path == "internal", ships(path), kit(path) >= 0:
		case strings.HasPrefix(path, "functions/"):
			t.Errorf("%s is a Lambda function that is not listed as shipped: add it to shippedBinaries in internal/layout_test.go", path)
		case path == localServer:
		case strings.HasPrefix(path, "cmd/"):
			t.Errorf("%s is a program under cmd/ that does not ship: add it to shippedBinaries in internal/layout_test.go if it does, or move it under the kit tree of its kind (internal/local/cmd, internal/testing/cmd, internal/bench/cmd)", path)
		case strings.HasPrefix(path, "internal/"):
			t.Errorf("%s is in no room of the layout and no kit tree: place it in internal/layout_test.go and docs/development.md's Layout, or move it under internal/local, internal/testing or internal/bench", path)
		default:
			t.Errorf("%s is outside functions/, cmd/ and internal/", path)
		}
	}
}

// TestImportsPointInward: shipped code imports nothing of a room further
// out and nothing of a kit; a kit imports no kit of a tree after its own.
func TestImportsPointInward(t *testing.T) {
	for path, p := range list(t) {
		r, k := room(path), kit(path)
		for _, imp := range ours(p.Imports) {
			switch {
			case ships(path) && kit(imp) >= 0:
				t.Errorf("%s imports %s: what ships imports no kit (%s)", path, imp, kits[kit(imp)].what)
			case k >= 0 && kit(imp) > k:
				t.Errorf("%s (%s) imports %s (%s): a kit imports no kit of a later tree", path, kits[k].tree, imp, kits[kit(imp)].tree)
			case r >= 0 && room(imp) > r:
				t.Errorf("%s (%s) imports %s (%s): imports must point inward", path, rooms[r].name, imp, rooms[room(imp)].name)
			case slices.Contains(forbidden[path], imp):
				t.Errorf("%s imports %s", path, imp)
			}
		}
	}
}

// TestTheDomainKnowsNoAWS: the contract and the domain, and the two flows,
// import no AWS SDK and no Lambda library.
func TestTheDomainKnowsNoAWS(t *testing.T) {
	pkgs := list(t)
	for _, r := range rooms[:2] {
		for _, path := range r.pkgs {
			for _, dep := range pkgs[path].Deps {
				if strings.HasPrefix(dep, "github.com/aws/") {
					t.Errorf("%s depends on %s", path, dep)
				}
			}
		}
	}
}

// TestWhatShipsCarriesNoKit: what a Lambda runs and the operator's tool
// depend, directly or not, on no kit and on no embedded store.
func TestWhatShipsCarriesNoKit(t *testing.T) {
	pkgs := list(t)
	functions := 0
	for path := range pkgs {
		if strings.HasPrefix(path, "functions/") {
			functions++
		}
	}
	if functions < 2 {
		t.Fatalf("%d functions found, want the callback and the worker", functions)
	}
	for _, path := range shippedBinaries {
		p, ok := pkgs[path]
		if !ok || p.Name != "main" {
			t.Errorf("%s is listed as shipped but is not a program of the module", path)
			continue
		}
		for _, dep := range p.Deps {
			if rel, ok := strings.CutPrefix(dep, module); (ok && kit(rel) >= 0) || strings.Contains(dep, "/localdb") {
				t.Errorf("%s depends on %s", path, dep)
			}
		}
	}
}

// TestEveryPackageSaysWhatItIs: each package has a package comment.
func TestEveryPackageSaysWhatItIs(t *testing.T) {
	for path, p := range list(t) {
		if p.Doc == "" && path != "internal" {
			t.Errorf("%s has no package comment", path)
		}
	}
}

// TestReadmeMapsEveryPackage: docs/development.md's Layout section names every
// package of the module, and names no folder that is gone.
func TestReadmeMapsEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("../docs/development.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	start := strings.Index(s, "\n## Layout\n")
	if start < 0 {
		t.Fatal("docs/development.md has no Layout section")
	}
	section := s[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	named := map[string]bool{}
	for _, m := range regexp.MustCompile("`([a-z][a-z0-9/._-]*)/`").FindAllStringSubmatch(section, -1) {
		named[m[1]] = true
	}
	for path := range list(t) {
		if path != "internal" && !named[path] {
			t.Errorf("docs/development.md's Layout does not name %s/", path)
		}
	}
	for path := range named {
		if fi, err := os.Stat(filepath.Join("..", path)); err != nil || !fi.IsDir() {
			t.Errorf("docs/development.md's Layout names %s/, which is not a folder", path)
		}
	}
}

// TestNoTrackerReferences: code, comments, the Makefile, the template and
// the docs say what they
// mean instead of pointing at this project's tracker (the word issue, or
// a section sign, and a number), which a reader of the repository does not
// have. Other projects' issues are cited by their URL.
func TestNoTrackerReferences(t *testing.T) {
	ref := regexp.MustCompile(`(?i)\bissues? +[0-9]+|§ *[0-9]`)
	err := filepath.WalkDir("..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".tools", ".aws-sam", "bin", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if ext := filepath.Ext(path); ext != ".go" && ext != ".md" && ext != ".yaml" && d.Name() != "Makefile" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := ref.FindString(line); m != "" {
				t.Errorf("%s:%d cites %q, a tracker reference: say what it means", strings.TrimPrefix(path, "../"), i+1, m)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// requestPath is the code a call runs from a door to the transaction and
// back: the callback function, the transports and the MCP door, the
// callback flow, the contract and the domain, and the store.
var requestPath = []string{
	"functions/callback",
	"internal/apigw", "internal/httpapi", "internal/mcp",
	"internal/callback",
	"internal/canonjson", "internal/nonce", "internal/protocol",
	"internal/schema", "internal/ticket", "internal/identity", "internal/idempotency",
	"internal/dynamo",
}

// maxParams bounds the parameters of a function of the request path,
// receivers not counted: what a step needs beyond that travels as one
// value (the call, an operation, a lease).
const maxParams = 4

// TestRequestPathTakesFewParameters: no signature in the request path's
// shipped files (a function, a method, a function literal, an interface's
// method, a function type) takes more than maxParams parameters.
func TestRequestPathTakesFewParameters(t *testing.T) {
	fset := token.NewFileSet()
	signatures := 0
	for _, dir := range requestPath {
		files, err := filepath.Glob(filepath.Join("..", dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", dir, err)
		}
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(f, func(n ast.Node) bool {
				if ft, ok := n.(*ast.FuncType); ok {
					signatures++
					if c := params(ft); c > maxParams {
						t.Errorf("%s: a signature with %d parameters; at most %d on the request path", fset.Position(ft.Params.Pos()), c, maxParams)
					}
				}
				return true
			})
		}
	}
	if signatures < 300 {
		t.Fatalf("found %d signatures on the request path: the walk is broken", signatures)
	}
}

// params counts a signature's parameters, each name once (a, b int is
// two), a variadic one as one.
func params(ft *ast.FuncType) int {
	n := 0
	for _, f := range ft.Params.List {
		n += max(1, len(f.Names))
	}
	return n
}

// TestBothMainsAssembleOneServer: the Lambda function and the local
// server each build what they serve with one call of app.Server, given
// everything at construction: neither builds the router (httpapi.New) or
// the handler (app.Handler) itself, nor sets a field of either afterwards.
func TestBothMainsAssembleOneServer(t *testing.T) {
	fset := token.NewFileSet()
	for _, name := range []string{"../functions/callback/main.go", "../cmd/oncecall/main.go"} {
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		calls := map[string]int{}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
					if pkg, ok := sel.X.(*ast.Ident); ok {
						calls[pkg.Name+"."+sel.Sel.Name]++
					}
				}
			case *ast.AssignStmt:
				for _, l := range n.Lhs {
					if sel, ok := l.(*ast.SelectorExpr); ok {
						if id, ok := sel.X.(*ast.Ident); ok && (id.Name == "api" || id.Name == "h") {
							t.Errorf("%s: %s.%s is set after construction", fset.Position(l.Pos()), id.Name, sel.Sel.Name)
						}
					}
				}
			}
			return true
		})
		if calls["app.Server"] != 1 {
			t.Errorf("%s calls app.Server %d times, want once", name, calls["app.Server"])
		}
		for _, c := range []string{"httpapi.New", "app.Handler", "app.MCPOptions"} {
			if calls[c] != 0 {
				t.Errorf("%s calls %s itself; app.Server does", name, c)
			}
		}
	}
}

// toolFile reports whether path may name a tool: the tool's own file in
// the callback package (tools_*.go), or the ticket domain, which defines
// the ticket tools' arguments beside the ticket they describe.
func toolFile(path string) bool {
	return strings.HasPrefix(path, "internal/ticket/") ||
		(strings.HasPrefix(path, "internal/callback/tools_") && strings.HasSuffix(path, ".go"))
}

// TestNoToolIsNamedOutsideItsFile reads what ships (go/ast): outside a
// tool's own file, no code names a tool, by its name in a string or by the
// identifiers that define it, so no switch or literal picks one out. The
// doors, the pipeline, the store and the wiring serve whatever
// callback.Tools lists.
func TestNoToolIsNamedOutsideItsFile(t *testing.T) {
	var names []string
	for _, tl := range callback.Tools {
		names = append(names, tl.Name())
	}
	word := regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)\b`)
	// The identifiers of the ticket package that define its tools.
	defining := map[string]bool{"CreateName": true, "GetName": true, "Create": true, "Get": true}
	checked := 0
	for path := range list(t) {
		if !ships(path) {
			continue
		}
		files, _ := filepath.Glob(filepath.Join("..", path, "*.go"))
		for _, f := range files {
			rel := strings.TrimPrefix(filepath.ToSlash(f), "../")
			if strings.HasSuffix(f, "_test.go") || toolFile(rel) {
				continue
			}
			checked++
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(file, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.BasicLit:
					if x.Kind == token.STRING && word.MatchString(x.Value) {
						t.Errorf("%s names a tool in %s", rel, x.Value)
					}
				case *ast.SelectorExpr:
					if id, ok := x.X.(*ast.Ident); ok && id.Name == "ticket" && defining[x.Sel.Name] {
						t.Errorf("%s names a tool: ticket.%s", rel, x.Sel.Name)
					}
				}
				return true
			})
		}
	}
	if checked < 50 {
		t.Fatalf("read %d files of what ships", checked)
	}
}
