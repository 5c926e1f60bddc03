package hostiletest

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestDocumentsGiveTheCatalogueSize checks the size README.md and
// SECURITY.md state for the catalogue against the catalogue itself, so
// that adding or removing a case cannot leave them behind.
func TestDocumentsGiveTheCatalogueSize(t *testing.T) {
	n, err := NewNonces("k", 4)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []struct {
		file     string
		sentence *regexp.Regexp
		size     int
	}{
		{"../../../docs/development.md", regexp.MustCompile(`\*\*A hostile catalogue\*\* of (\d+) broken or malicious requests`), len(Cases(n))},
		{"../../../SECURITY.md", regexp.MustCompile(`the hostile catalogue \((\d+)\s+cases`), len(Cases(n))},
		{"../../../docs/development.md", regexp.MustCompile(`\*\*The MCP door's hostile catalogue\*\* of (\d+)`), len(MCPCases(n))},
	} {
		file, sentence, size := d.file, d.sentence, d.size
		text, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m := sentence.FindSubmatch(text)
		if m == nil {
			t.Errorf("%s: no sentence matching %q", file, sentence)
			continue
		}
		if got, _ := strconv.Atoi(string(m[1])); got != size {
			t.Errorf("%s says the catalogue has %d cases; it has %d", file, got, size)
		}
	}
}

// TestSecuritySaysTheSDKsRefusalsAreClipped: SECURITY.md's sentence on
// the MCP SDK's refusals, which the MCP catalogue's cases check.
func TestSecuritySaysTheSDKsRefusalsAreClipped(t *testing.T) {
	raw, err := os.ReadFile("../../../SECURITY.md")
	if err != nil {
		t.Fatal(err)
	}
	want := "on `/mcp` that holds for the refusals the MCP SDK writes too, none quotes a nonce, and an unknown method is answered `-32601` with the request's id at every version served"
	if !regexp.MustCompile(regexp.QuoteMeta(want)).Match([]byte(strings.Join(strings.Fields(string(raw)), " "))) {
		t.Errorf("SECURITY.md no longer says %q", want)
	}
}
