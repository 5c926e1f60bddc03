package protocol

import (
	"strings"
	"testing"
)

func TestValidRequestID(t *testing.T) {
	for s, want := range map[string]bool{
		"request-example":                        true,
		"a":                                      true,
		strings.Repeat("x", MaxRequestIDBytes):   true,
		strings.Repeat("x", MaxRequestIDBytes+1): false,
		"":                                       false,
		"has space":                              false,
		"tab\there":                              false,
		"é":                                      false,
		"del\x7f":                                false,
		"~!#$%&'()*+,-./:;<=>?@[\\]^_`{|}":       true,
	} {
		if got := ValidRequestID(s); got != want {
			t.Errorf("ValidRequestID(%q) = %v, want %v", s, got, want)
		}
	}
}
