package canonjson

import (
	"fmt"
	"unicode/utf8"
)

// Helpers for messages about a parsed document, which every package that
// refuses caller JSON (protocol for the body, schema for the arguments)
// phrases alike.

// Kind names a decoded JSON value's type for messages.
func Kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	default:
		return fmt.Sprintf("%T", v)
	}
}

// Clip shortens a caller-supplied string before it is echoed in a message.
func Clip(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
