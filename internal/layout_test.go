// Package internal_test checks the layout docs/development.md's "Layout" section
// describes: what ships stands apart from the tools and test kits, and
// imports point inward only.
package internal_test

import (
	"bytes"
	"encoding/json"
	"errors"
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
	{"the flows: a callback, a delivery", []string{"internal/callback", "internal/delivery"}},
	{"the adapters: transports, event sources, the store, the destinations", []string{
		"internal/apigw", "internal/httpapi", "internal/mcp", "internal/stream", "internal/dynamo",
		"internal/delivery/httpsend", "internal/delivery/webhook", "internal/delivery/zendesk", "internal/delivery/rt",
		"internal/auditkms",
	}},
	{"the wiring", []string{"internal/config", "internal/secret", "internal/metrics", "internal/app", "internal/app/profile"}},
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

// TestEveryShippedPackageHasARoom: a new package under internal/ must be
// placed, here and in docs/development.md's map, or live under internal/dev.
func TestEveryShippedPackageHasARoom(t *testing.T) {
	for path := range list(t) {
		if strings.HasPrefix(path, "internal/") && !strings.HasPrefix(path, "internal/dev/") && path != "internal" && room(path) < 0 {
			t.Errorf("%s is in no room of the layout: place it in internal/layout_test.go and docs/development.md's Layout, or move it under internal/dev", path)
		}
	}
}

// TestImportsPointInward: shipped code imports nothing of a room further
// out, and nothing of internal/dev.
func TestImportsPointInward(t *testing.T) {
	for path, p := range list(t) {
		r := room(path)
		for _, imp := range ours(p.Imports) {
			switch {
			case strings.HasPrefix(imp, "internal/dev/") && !strings.HasPrefix(path, "internal/dev/") && !strings.HasPrefix(path, "cmd/"):
				t.Errorf("%s imports %s: only tools (cmd/) and internal/dev may use the kits", path, imp)
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

// TestDeployedFunctionsCarryNoKit: what a Lambda runs depends on nothing of
// internal/dev and on no embedded store.
func TestDeployedFunctionsCarryNoKit(t *testing.T) {
	n := 0
	for path, p := range list(t) {
		if !strings.HasPrefix(path, "functions/") {
			continue
		}
		n++
		for _, dep := range p.Deps {
			if strings.HasPrefix(dep, module+"internal/dev/") || strings.Contains(dep, "/localdb") {
				t.Errorf("%s depends on %s", path, dep)
			}
		}
	}
	if n < 2 {
		t.Fatalf("%d functions found, want the callback and the worker", n)
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
