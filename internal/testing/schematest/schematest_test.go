package schematest

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

const (
	idPattern   = `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`
	linePattern = `^[^\x00-\x1F\x7F-\x9F]*$`
)

func TestMatchesMatchAndMissesMiss(t *testing.T) {
	for _, p := range []string{idPattern, linePattern, `^(ab|c+)d?$`, `x[0-9]{2,3}`} {
		re := regexp.MustCompile(p)
		ms, err := Matches(p)
		if err != nil || len(ms) == 0 {
			t.Fatalf("Matches(%q) = %q, %v", p, ms, err)
		}
		for _, m := range ms {
			if !re.MatchString(m) {
				t.Errorf("Matches(%q) gave %q, which it does not match", p, m)
			}
		}
		xs, err := Misses(p)
		if err != nil || len(xs) == 0 {
			t.Fatalf("Misses(%q) = %q, %v", p, xs, err)
		}
		for _, x := range xs {
			if re.MatchString(x) {
				t.Errorf("Misses(%q) gave %q, which it matches", p, x)
			}
		}
	}
}

// TestMissesAreAtTheEdges: the misses of a character class are the
// characters just outside it, and those of a repetition one short and one
// over.
func TestMissesAreAtTheEdges(t *testing.T) {
	xs, _ := Misses(linePattern)
	for _, want := range []string{"\x1f", "\x7f", "\u009f"} {
		if !slices.ContainsFunc(xs, func(x string) bool { return strings.Contains(x, want) }) {
			t.Errorf("Misses(%q) = %q: nothing holds %q", linePattern, xs, want)
		}
	}
	xs, _ = Misses(idPattern)
	var lengths []int
	for _, x := range xs {
		lengths = append(lengths, len(x))
	}
	for _, want := range []int{35, 37} {
		if !slices.Contains(lengths, want) {
			t.Errorf("Misses(id pattern): no miss of length %d: %q", want, xs)
		}
	}
	if !slices.ContainsFunc(xs, func(x string) bool { return len(x) == 36 && x[14] == '5' }) {
		t.Errorf("Misses(id pattern): no miss with another version digit: %q", xs)
	}
	ms, _ := Matches(linePattern)
	if !slices.Contains(ms, "") || !slices.ContainsFunc(ms, func(m string) bool { return strings.ContainsRune(m, 0x10FFFF) }) {
		t.Errorf("Matches(%q) = %q: want the empty string and the last character", linePattern, ms)
	}
}

var object = `{"type":"object","additionalProperties":false,"required":["title"],"properties":{
	"title":{"type":"string","minLength":1,"maxLength":5,"pattern":"^[^\\x00-\\x1F]*$"},
	"level":{"type":"string","enum":["low","high"],"default":"low"},
	"tags":{"type":"array","maxItems":3,"uniqueItems":true,"items":{"type":"string","minLength":1,"maxLength":4}}}}`

func decode(t *testing.T, s string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestObjectsCoverEveryBoundary checks that each kind of boundary is there,
// both valid and invalid where the schema allows both, with lengths
// counted in characters.
func TestObjectsCoverEveryBoundary(t *testing.T) {
	insts, err := Objects(decode(t, object))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[Kind][2]int{}
	for _, in := range insts {
		c := seen[in.Kind]
		if in.Valid {
			c[0]++
		} else {
			c[1]++
		}
		seen[in.Kind] = c
	}
	for k, want := range map[Kind][2]bool{
		Example: {true, false}, Length: {true, true}, Enum: {true, true}, Pattern: {true, true}, Character: {true, true},
		Default: {true, false}, Type: {false, true}, Null: {false, true}, Size: {true, true},
		Unique: {true, true}, Items: {true, true}, Required: {false, true}, Unknown: {false, true},
	} {
		if got := seen[k]; (got[0] > 0) != want[0] || (got[1] > 0) != want[1] {
			t.Errorf("%s: %d valid, %d invalid", k, got[0], got[1])
		}
	}
	title := func(v string) (Instance, bool) {
		i := slices.IndexFunc(insts, func(in Instance) bool { return in.Member == "title" && in.Value.(map[string]any)["title"] == v })
		if i < 0 {
			return Instance{}, false
		}
		return insts[i], true
	}
	for v, valid := range map[string]bool{"𝄞𝄞𝄞𝄞𝄞": true, "𝄞𝄞𝄞𝄞𝄞𝄞": false, "": false, "é": true, "a\x1f": false} {
		in, ok := title(v)
		if !ok && utf8.RuneCountInString(v) != 2 {
			t.Errorf("no title %q among the instances", v)
			continue
		}
		if ok && in.Valid != valid {
			t.Errorf("title %q: Valid %v, want %v", v, in.Valid, valid)
		}
	}
}

func TestUnknownKeywordsAreRefused(t *testing.T) {
	for _, s := range []string{
		`{"type":"object","additionalProperties":false,"properties":{"x":{"type":"string","format":"email"}}}`,
		`{"type":"object","additionalProperties":false,"properties":{"x":{"type":"integer"}}}`,
		`{"type":"object","properties":{}}`,
		`{"type":"object","additionalProperties":false,"minProperties":1,"properties":{}}`,
	} {
		if _, err := Objects(decode(t, s)); err == nil {
			t.Errorf("Objects(%s) generated instances", s)
		}
	}
}
