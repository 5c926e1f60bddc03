package callback_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testing/doctest"
)

// The words a newcomer meets first, which the glossary must define.
var firstWords = []string{"door", "operation", "key", "outbox", "lease", "sweep", "attention", "settle"}

// TestGlossary: the oncecall's words section of docs/glossary.md and this
// package's documentation define the same words, among them every word of
// firstWords, and every Go identifier the section names is declared in the
// shipped package it names.
func TestGlossary(t *testing.T) {
	root, err := doctest.Root()
	if err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(root, "docs", "glossary.md"))
	if err != nil {
		t.Fatal(err)
	}
	section, ok := doctest.Section(string(page), "## oncecall's words")
	if !ok {
		t.Fatal("docs/glossary.md has no section ## oncecall's words")
	}
	entries := map[string]string{}
	var pageWords []string
	for _, e := range strings.Split(section, "\n### ")[1:] {
		word, def, _ := strings.Cut(e, "\n")
		if def = strings.TrimSpace(def); def == "" {
			t.Fatalf("the glossary's %q has no definition", word)
		}
		entries[word] = def
		pageWords = append(pageWords, word)
	}
	if !slices.IsSorted(pageWords) {
		t.Errorf("the glossary's words are not in alphabetical order: %v", pageWords)
	}

	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	doc := f.Doc.Text()
	_, glossary, ok := strings.Cut(doc, "# Glossary\n")
	if !ok {
		t.Fatal("the package documentation has no # Glossary")
	}
	var docWords []string
	for _, m := range regexp.MustCompile(`(?m)^  - ([a-z ]+):`).FindAllStringSubmatch(glossary, -1) {
		docWords = append(docWords, m[1])
	}
	if !slices.Equal(docWords, pageWords) {
		t.Errorf("the package documentation defines %v; docs/glossary.md %v", docWords, pageWords)
	}
	for _, w := range firstWords {
		if entries[w] == "" {
			t.Errorf("the glossary does not define %q", w)
		}
	}

	decls := declarations(t, filepath.Join(root, "internal"))
	ident := regexp.MustCompile("`([a-z]+)\\.([A-Z][A-Za-z]*)(?:\\.([A-Z][A-Za-z]*))?`")
	for word, def := range entries {
		names := ident.FindAllStringSubmatch(def, -1)
		if len(names) == 0 {
			t.Errorf("the glossary's %q names no Go identifier", word)
		}
		for _, n := range names {
			if pkg := decls[n[1]]; pkg == nil || !pkg[n[2]] || (n[3] != "" && !pkg[n[2]+"."+n[3]]) {
				t.Errorf("the glossary's %q names %s, which no shipped package declares", word, strings.Trim(n[0], "`"))
			}
		}
	}
}

// declarations maps the name of every shipped package under dir (the kit
// trees left out) to the names its files declare: types, functions,
// constants and variables, and Type.Method and Type.Field.
func declarations(t *testing.T, dir string) map[string]map[string]bool {
	t.Helper()
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "testing", "local", "bench", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		names := out[f.Name.Name]
		if names == nil {
			names = map[string]bool{}
			out[f.Name.Name] = names
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil {
					names[d.Name.Name] = true
					continue
				}
				recv := d.Recv.List[0].Type
				if star, ok := recv.(*ast.StarExpr); ok {
					recv = star.X
				}
				if id, ok := recv.(*ast.Ident); ok {
					names[id.Name+"."+d.Name.Name] = true
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						names[s.Name.Name] = true
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, field := range st.Fields.List {
								for _, n := range field.Names {
									names[s.Name.Name+"."+n.Name] = true
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							names[n.Name] = true
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
