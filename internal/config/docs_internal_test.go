package config

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// numberWords are the counts the pages spell out.
var numberWords = map[string]int{"ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
	"sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20}

// TestDocsCountTheDeliverySettings: docs/configuration.md says how many
// delivery settings stop a start without DESTINATION, and that count is
// the number config refuses (deliverySettings); the settings table names
// each of them.
func TestDocsCountTheDeliverySettings(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(string(raw)), " ")
	m := regexp.MustCompile(`any of the (\w+) delivery settings`).FindStringSubmatch(text)
	if m == nil {
		t.Fatal(`docs/configuration.md no longer says "any of the N delivery settings"`)
	}
	if n, ok := numberWords[m[1]]; !ok || n != len(deliverySettings) {
		t.Errorf("docs/configuration.md counts %q delivery settings; config refuses %d without %s", m[1], len(deliverySettings), EnvDestination)
	}
	for _, name := range deliverySettings {
		if !strings.Contains(text, "`"+name+"`") {
			t.Errorf("docs/configuration.md does not name %s", name)
		}
	}
}

// TestDocsSayWhatPublicURLAccepts: the settings table's row of PUBLIC_URL
// names every scheme Load accepts in it, and only those.
func TestDocsSayWhatPublicURLAccepts(t *testing.T) {
	raw, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile("(?m)^\\| `" + EnvPublicURL + "` \\|.*$").FindString(string(raw))
	cells := strings.Split(row, "|")
	if len(cells) < 6 {
		t.Fatalf("docs/configuration.md has no settings row for %s", EnvPublicURL)
	}
	accepts := cells[4]
	for _, scheme := range []string{"http://", "https://", "ftp://"} {
		env := map[string]string{EnvHookKey: "local-demo-hook-key-0123456789", EnvPublicURL: scheme + "api.example.com"}
		_, err := Load(func(k string) string { return env[k] }, Defaults, nil)
		if named := strings.Contains(accepts, "`"+scheme+"`"); named != (err == nil) {
			t.Errorf("%s=%sapi.example.com: Load says %v; the row's Accepts cell (%s) names it: %v", EnvPublicURL, scheme, err, strings.TrimSpace(accepts), named)
		}
	}
}
