package schema

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/canonjson"
)

var fn = &Function{
	Name: "f",
	Params: []Param{
		{Name: "title", Kind: String, Required: true, MinLength: 1, MaxLength: 5, Description: "A title."},
		{Name: "body", Kind: String, MaxLength: 20, Multiline: true, Description: "Text."},
		{Name: "level", Kind: String, Enum: []string{"a", "b"}, Default: "a", Description: "A level."},
		{Name: "code", Kind: String, Pattern: NewPattern(`^[0-9]{3}$`), PatternHint: "three digits", Description: "A code."},
		{Name: "tags", Kind: StringList, Set: true, MaxItems: 2, MinLength: 1, MaxLength: 3, Description: "Tags."},
		{Name: "steps", Kind: StringList, MaxItems: 3, MinLength: 1, MaxLength: 3, Description: "Steps, in order."},
	},
}

func TestValidateAccepts(t *testing.T) {
	ok := []map[string]any{
		{"title": "x"},
		{"title": "héllo", "body": "a\nb\tc", "level": "b", "code": "123", "tags": []any{"x", "yz"}},
		{"title": "x", "body": nil},                   // null counts as absent
		{"title": "x", "steps": []any{"a", "b", "a"}}, // a list that is not a set may repeat
	}
	for _, args := range ok {
		if v := fn.Validate(args); len(v) > 0 {
			t.Errorf("Validate(%v) = %v", args, v)
		}
	}
}

func TestValidateRefuses(t *testing.T) {
	cases := []struct {
		args map[string]any
		says string
	}{
		{map[string]any{}, "title is required: A title."},
		{map[string]any{"title": ""}, "title is empty"},
		{map[string]any{"title": "toolong"}, "title is 7 characters; shorten it to at most 5"},
		{map[string]any{"title": 3.0}, "title must be a string, not a number"},
		{map[string]any{"title": "a\nb"}, "title must be a single line"},
		{map[string]any{"title": "x", "body": "a\x00b"}, "body contains a control character (U+0000)"},
		{map[string]any{"title": "x", "level": "c"}, `level "c" is not one of "a", "b"`},
		{map[string]any{"title": "x", "code": "12"}, `code "12" is not three digits`},
		{map[string]any{"title": "x", "tags": "x"}, "tags must be an array of strings"},
		{map[string]any{"title": "x", "tags": []any{"a", "b", "c"}}, "tags has 3 items; send at most 2"},
		{map[string]any{"title": "x", "tags": []any{"a", true}}, "tags[1] must be a string, not a boolean"},
		{map[string]any{"title": "x", "tags": []any{"abcd"}}, "tags[0] is 4 characters"},
		{map[string]any{"title": "x", "tags": []any{"a", "a"}}, `tags[1] repeats "a"`},
		{map[string]any{"title": "x", "extra": 1, "more": 2}, `"extra", "more" are not accepted; the accepted arguments are "title", "body", "level", "code", "tags"`},
	}
	for _, c := range cases {
		v := fn.Validate(c.args)
		if len(v) == 0 {
			t.Errorf("Validate(%v) accepted", c.args)
			continue
		}
		var msgs []string
		for _, x := range v {
			msgs = append(msgs, x.Message)
		}
		if all := strings.Join(msgs, "; "); !strings.Contains(all, c.says) {
			t.Errorf("Validate(%v) = %q, want it to say %q", c.args, all, c.says)
		}
	}
}

func TestValidateReportsEveryProblem(t *testing.T) {
	v := fn.Validate(map[string]any{"title": "", "level": "z", "x": 1})
	if len(v) != 3 {
		t.Fatalf("got %d violations, want 3: %v", len(v), v)
	}
}

// TestSchemaMatchesValidator checks the JSON Schema against the declarations
// it is derived from.
func TestSchemaMatchesValidator(t *testing.T) {
	b, err := json.Marshal(fn.JSONSchema())
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		Type                 string
		Required             []string
		AdditionalProperties bool
		Properties           map[string]map[string]any
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Type != "object" || s.AdditionalProperties || len(s.Required) != 1 || s.Required[0] != "title" {
		t.Fatalf("schema %s", b)
	}
	if p := s.Properties["title"]; p["maxLength"] != 5.0 || p["minLength"] != 1.0 || p["type"] != "string" {
		t.Errorf("title %v", p)
	}
	if p := s.Properties["code"]; p["pattern"] != "^[0-9]{3}$" {
		t.Errorf("code %v", p)
	}
	if p := s.Properties["tags"]; p["type"] != "array" || p["maxItems"] != 2.0 || p["uniqueItems"] != true {
		t.Errorf("tags %v", p)
	}
	if p := s.Properties["steps"]; p["type"] != "array" || p["uniqueItems"] != nil {
		t.Errorf("steps, a list that is not a set, %v", p)
	}
	if p := s.Properties["level"]; p["default"] != "a" || p["pattern"] != nil {
		t.Errorf("level %v", p)
	}
	for name, want := range map[string]any{"title": singleLinePattern, "body": multiLinePattern, "code": "^[0-9]{3}$"} {
		if got := s.Properties[name]["pattern"]; got != want {
			t.Errorf("%s pattern %v, want %v", name, got, want)
		}
	}
	if items := s.Properties["tags"]["items"].(map[string]any); items["pattern"] != singleLinePattern {
		t.Errorf("tags items %v", items)
	}
	for name, p := range s.Properties {
		if _, ok := p["default"]; ok && name != "level" {
			t.Errorf("%s has a default: %v", name, p)
		}
	}
	if len(s.Properties) != len(fn.Params) {
		t.Errorf("%d properties, %d params", len(s.Properties), len(fn.Params))
	}
}

// TestNormalize states the rules with one example each: what means absent
// is dropped, defaults are filled in, sets are put in one order, and
// nothing else changes.
func TestNormalize(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want string
	}{
		{"default filled in", `{"title":"x"}`, `{"level":"a","title":"x"}`},
		{"default spelled out", `{"title":"x","level":"a"}`, `{"level":"a","title":"x"}`},
		{"another value kept", `{"title":"x","level":"b"}`, `{"level":"b","title":"x"}`},
		{"null is absent", `{"title":"x","body":null,"code":null,"tags":null,"level":null}`, `{"level":"a","title":"x"}`},
		{"empty string of an optional parameter is absent", `{"title":"x","body":""}`, `{"level":"a","title":"x"}`},
		{"empty optional list is absent", `{"title":"x","tags":[],"steps":[]}`, `{"level":"a","title":"x"}`},
		{"set sorted", `{"title":"x","tags":["b","a"]}`, `{"level":"a","tags":["a","b"],"title":"x"}`},
		{"set by code point", `{"title":"x","tags":["é","z"]}`, `{"level":"a","tags":["z","é"],"title":"x"}`},
		{"list keeps its order and repeats", `{"title":"x","steps":["b","a","b"]}`, `{"level":"a","steps":["b","a","b"],"title":"x"}`},
		{"strings kept as sent", `{"title":" X ","body":"A\n"}`, `{"body":"A\n","level":"a","title":" X "}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var in map[string]any
			if err := json.Unmarshal([]byte(c.in), &in); err != nil {
				t.Fatal(err)
			}
			got, v := fn.Normalize(in)
			if len(v) > 0 {
				t.Fatalf("Normalize(%s): %v", c.in, v)
			}
			b, err := canonjson.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.want {
				t.Fatalf("Normalize(%s) = %s, want %s", c.in, b, c.want)
			}
			again, v := fn.Normalize(got)
			if b2, _ := canonjson.Marshal(again); len(v) > 0 || string(b2) != string(b) {
				t.Fatalf("Normalize is not idempotent: %s, then %s %v", b, b2, v)
			}
		})
	}
}

func TestNormalizeRefusesWhatValidateRefuses(t *testing.T) {
	got, v := fn.Normalize(map[string]any{"title": "", "tags": []any{"a", "a"}})
	if got != nil || len(v) != 2 {
		t.Fatalf("Normalize = %v, %v", got, v)
	}
}

func TestNormalizeSharesNothingWithItsInput(t *testing.T) {
	tags := []any{"b", "a"}
	in := map[string]any{"title": "x", "tags": tags}
	got, _ := fn.Normalize(in)
	got["tags"].([]any)[0] = "changed"
	if tags[0] != "b" || tags[1] != "a" || len(in) != 2 {
		t.Fatalf("the input changed: %v", in)
	}
}

// TestControlPatternsSayWhatCheckStringRefuses compares the published
// control-character patterns with the validator, character by character.
func TestControlPatternsSayWhatCheckStringRefuses(t *testing.T) {
	runes := []rune{0xFEFF, 0xFFFD, 0xFFFF, 0x1F600, 0x10FFFF}
	for r := rune(0); r < 0x3000; r++ {
		runes = append(runes, r)
	}
	for _, multiline := range []bool{false, true} {
		p := Param{Name: "s", Kind: String, Multiline: multiline}
		re := regexp.MustCompile(controlPattern(multiline))
		for _, r := range runes {
			s := "a" + string(r) + "b"
			if accepted, matched := p.checkString("s", s) == "", re.MatchString(s); accepted != matched {
				t.Errorf("multiline %v, U+%04X: the validator accepts it %v, the pattern matches it %v", multiline, r, accepted, matched)
			}
		}
	}
}
