package hostiletest

import (
	"os"
	"regexp"
	"strconv"
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
	size := len(Cases(n))
	for file, sentence := range map[string]*regexp.Regexp{
		"../../../README.md":   regexp.MustCompile(`\*\*A hostile catalogue\*\* of (\d+) broken or malicious requests`),
		"../../../SECURITY.md": regexp.MustCompile(`the hostile catalogue \((\d+)\s+cases`),
	} {
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
