package secret

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	for in, want := range map[string]Keys{
		"plain-key":                                   {Current: "plain-key"},
		"  plain-key\n":                               {Current: "plain-key"},
		`{"current":"new"}`:                           {Current: "new"},
		`{"current":"new","previous":"old"}`:          {Current: "new", Previous: "old"},
		" {\"previous\":\"old\",\"current\":\"new\"}": {Current: "new", Previous: "old"},
		`{"current":"new","previous":"old","previous_until":"2026-12-01T12:00:00Z"}`: {Current: "new", Previous: "old",
			PreviousUntil: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)},
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %+v, %v; want %+v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "   ", `{"previous":"old"}`, `{"current":"a","extra":1}`, `{"current":`,
		`{"current":"new","previous_until":"2026-12-01T12:00:00Z"}`, `{"current":"new","previous":"old","previous_until":"tomorrow"}`} {
		if k, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) accepted: %+v", in, k)
		}
	}
}

func TestParseErrorsDoNotEchoTheSecret(t *testing.T) {
	_, err := Parse(`{"current":"s3cr3t-value","bogus":true}`)
	if err == nil {
		t.Fatal("accepted")
	}
	if s := err.Error(); len(s) == 0 || strings.Contains(s, "s3cr3t") {
		t.Fatalf("error %q echoes the secret", s)
	}
}
