package mcpclients_test

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"
)

// TestDocsPinTheInspector: every npx command of the pages that runs the
// MCP Inspector names the version this package's tests install, so that a
// reader does not get a cached older one (which refuses the command's
// arguments for a URL-based server).
func TestDocsPinTheInspector(t *testing.T) {
	raw, err := os.ReadFile("package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(raw, &pkg); err != nil {
		t.Fatal(err)
	}
	want := pkg.Dependencies["@modelcontextprotocol/inspector"]
	if want == "" {
		t.Fatal("package.json pins no @modelcontextprotocol/inspector")
	}
	npx := regexp.MustCompile(`npx\s+(?:-y\s+)?@modelcontextprotocol/inspector(@\S+)?`)
	n := 0
	for _, page := range []string{"../../../README.md", "../../../docs/mcp.md", "../../../docs/troubleshooting.md", "../../../docs/development.md"} {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range npx.FindAllStringSubmatch(string(b), -1) {
			n++
			if m[1] != "@"+want {
				t.Errorf("%s runs %q: pin it to @%s, the version the tests install", page, m[0], want)
			}
		}
	}
	if n == 0 {
		t.Error("no page runs the MCP Inspector with npx")
	}
}
