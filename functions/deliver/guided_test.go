package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testing/doctest"
	"github.com/oncecall/oncecall/internal/testing/samtest"
)

// TestFirstDeployPrompts: docs/deploy.md's first deploy quotes the prompts
// of the SAM CLI the Makefile pins as that CLI's source words them, counts
// the template's parameters, and names the functions the authorization
// prompt asks about. It reads the CLI that make sam installs.
func TestFirstDeployPrompts(t *testing.T) {
	makefile := string(readFile(t, "../../Makefile"))
	m := regexp.MustCompile(`(?m)^SAM_VERSION\s*:=\s*(\S+)`).FindStringSubmatch(makefile)
	if m == nil {
		t.Fatal("the Makefile pins no SAM_VERSION")
	}
	version := m[1]
	site, _ := filepath.Glob("../../.tools/sam/lib/python3*/site-packages/samcli/commands/deploy")
	if len(site) != 1 {
		t.Skip("the pinned SAM CLI is not installed: make sam")
	}
	var src strings.Builder
	for _, f := range []string{"guided_context.py", "deploy_context.py"} {
		b, err := os.ReadFile(filepath.Join(site[0], f))
		if err != nil {
			t.Fatal(err)
		}
		src.Write(b)
	}
	// The CLI's f-strings put bold markers around each prompt's words.
	code := regexp.MustCompile(`\{(self\.)?(start|end)_bold\}`).ReplaceAllString(src.String(), "")

	page := string(readFile(t, "../../docs/deploy.md"))
	section, ok := doctest.Section(page, "### Build and deploy")
	if !ok {
		t.Fatal("docs/deploy.md has no Build and deploy section")
	}
	if !strings.Contains(section, "SAM CLI ("+version+")") {
		t.Errorf("the first deploy does not name the pinned SAM CLI %s", version)
	}
	tmpl := samtest.Read(t, templatePath)
	var routed []string
	for name, r := range tmpl["Resources"].(map[string]any) {
		props, _ := r.(map[string]any)["Properties"].(map[string]any)
		events, _ := props["Events"].(map[string]any)
		for _, e := range events {
			// SAM CLI asks only of a route without Auth (auth_utils.py).
			ep, _ := e.(map[string]any)["Properties"].(map[string]any)
			if _, auth := ep["Auth"]; e.(map[string]any)["Type"] == "HttpApi" && !auth {
				routed = append(routed, name)
				break
			}
		}
	}
	rows := regexp.MustCompile("(?m)^\\| `([^`]+)`").FindAllStringSubmatch(section, -1)
	if len(rows) < 8 {
		t.Fatalf("the guided deploy's table quotes %d prompts", len(rows))
	}
	auth := false
	for _, r := range rows {
		words := strings.TrimSpace(regexp.MustCompile(`\s*(\[[^\]]*\]|…)\s*$`).ReplaceAllString(r[1], ""))
		words = strings.TrimSuffix(words, ":")
		if words == "Parameter" || strings.HasPrefix(words, "Parameter ") {
			words = "Parameter {parameter_key}"
		}
		if fn, rest, ok := strings.Cut(words, " has no authentication."); ok {
			auth = true
			if len(routed) != 1 || fn != routed[0] {
				t.Errorf("the authorization prompt names %s; the functions with a route are %v", fn, routed)
			}
			words = "{resource} has no authentication." + rest
		}
		if !strings.Contains(code, `"`+words) && !strings.Contains(code, `"\t`+words) {
			t.Errorf("SAM CLI %s does not ask %q", version, words)
		}
	}
	if !auth || !strings.Contains(section, "Error: Security Constraints Not Satisfied!") || !strings.Contains(code, `"Security Constraints Not Satisfied!"`) {
		t.Error("the page does not quote the authorization prompt and the error its default ends the deploy with")
	}
	// A NoEcho parameter is asked with no default: the page says so of
	// each.
	for name, p := range tmpl["Parameters"].(map[string]any) {
		if p.(map[string]any)["NoEcho"] == true && !strings.Contains(section, "| `Parameter "+name+":` | a hidden prompt with no default") {
			t.Errorf("the guided deploy's table does not say that Parameter %s has no default", name)
		}
	}
	n := len(tmpl["Parameters"].(map[string]any))
	if !strings.Contains(section, fmt.Sprintf("one per parameter of `template.yaml`, %d)", n)) {
		t.Errorf("the guided deploy's table does not count the template's %d parameters", n)
	}
}
