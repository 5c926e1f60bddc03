package schematest

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Kind says which boundary an instance probes.
type Kind string

// Kinds of instance.
const (
	// Example is a value chosen to be valid: a minimal or a full object.
	Example Kind = "example"
	// Length is a string of a length at a bound, or one beyond it.
	Length Kind = "length"
	// Enum is an enumeration's member or a near miss.
	Enum Kind = "enum"
	// Pattern is a string that matches a pattern or just misses it.
	Pattern Kind = "pattern"
	// Character is a valid string with one more character from Probes:
	// what a validator may refuse that no keyword states.
	Character Kind = "character"
	// Default is the value a schema declares as its default.
	Default Kind = "default"
	// Type is a value of another JSON type.
	Type Kind = "type"
	// Null is null where the schema names a type.
	Null Kind = "null"
	// Size is an array of a size at a bound, or one beyond it.
	Size Kind = "size"
	// Unique is an array with an item repeated, or in another order.
	Unique Kind = "unique"
	// Items is an array holding one item's instance.
	Items Kind = "items"
	// Required is an object without one of its required members.
	Required Kind = "required"
	// Unknown is an object with a member the schema does not declare.
	Unknown Kind = "unknown"
)

// UnknownMember is the member name Objects adds to probe
// additionalProperties.
const UnknownMember = "unknown_member"

// Probes are characters every string schema is tried with, whatever its
// keywords say: C0 controls (tab, line feed and carriage return among
// them), DEL, C1 controls, and the characters around and beyond them that
// a validator may mistake for controls.
var Probes = []rune{0x00, 0x09, 0x0A, 0x0D, 0x1F, 0x20, 0x7E, 0x7F, 0x80, 0x85, 0x9F, 0xA0, 0x2028, 0xFEFF, 0xFFFD, 0x10FFFF}

// fillers are the characters length instances are made of: one, two,
// three and four bytes in UTF-8, the last one two units in UTF-16.
var fillers = []string{"a", "é", "字", "𝄞"}

// Instance is one JSON value to validate.
type Instance struct {
	// Name says what the instance is, for failure messages.
	Name string
	// Member is the top-level member an object instance varies; "" when
	// the instance varies no single member.
	Member string
	// Kind is the boundary it probes.
	Kind Kind
	// Value is the instance, as encoding/json decodes JSON into any.
	Value any
	// Valid is what the schema's keywords say of Value.
	Valid bool
}

// keywords each type of schema may use; anything else is refused.
var keywords = map[string][]string{
	"string": {"type", "description", "default", "minLength", "maxLength", "enum", "pattern"},
	"array":  {"type", "description", "default", "items", "minItems", "maxItems", "uniqueItems"},
	"object": {"type", "description", "properties", "required", "additionalProperties"},
}

// Objects returns the instances of s, the JSON Schema of an object whose
// properties are strings or arrays of strings: a minimal and a full valid
// object, each of its members' instances (Values) in a minimal object,
// each required member missing, an unknown member, and other types.
func Objects(s map[string]any) ([]Instance, error) {
	if err := known(s, "object", ""); err != nil {
		return nil, err
	}
	if s["additionalProperties"] != false {
		return nil, fmt.Errorf("schematest: only objects with additionalProperties false are generated")
	}
	props, _ := s["properties"].(map[string]any)
	var required []string
	for _, r := range asSlice(s["required"]) {
		required = append(required, r.(string))
	}
	names := slices.Sorted(maps.Keys(props))
	values := map[string][]Instance{}
	first := map[string]any{}
	for _, n := range names {
		ps, ok := props[n].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("schematest: property %s is not a schema", n)
		}
		vs, err := Values(ps, n)
		if err != nil {
			return nil, err
		}
		values[n] = vs
		i := slices.IndexFunc(vs, func(x Instance) bool { return x.Valid && !empty(x.Value) })
		if i < 0 {
			i = slices.IndexFunc(vs, func(x Instance) bool { return x.Valid })
		}
		if i < 0 {
			return nil, fmt.Errorf("schematest: no valid value generated for %s", n)
		}
		first[n] = vs[i].Value
	}
	minimal := map[string]any{}
	for _, r := range required {
		v, ok := first[r]
		if !ok {
			return nil, fmt.Errorf("schematest: required member %s has no schema", r)
		}
		minimal[r] = v
	}
	with := func(name string, v any) map[string]any {
		m := maps.Clone(minimal)
		m[name] = v
		return m
	}
	out := []Instance{
		{Name: "minimal object", Kind: Example, Value: maps.Clone(minimal)},
		{Name: "every member", Kind: Example, Value: maps.Clone(first)},
		{Name: "unknown member", Kind: Unknown, Value: with(UnknownMember, "x")},
	}
	for _, n := range names {
		for _, v := range values[n] {
			out = append(out, Instance{Name: n + ": " + v.Name, Member: n, Kind: v.Kind, Value: with(n, v.Value)})
		}
	}
	for _, r := range required {
		m := maps.Clone(minimal)
		delete(m, r)
		out = append(out, Instance{Name: "without " + r, Member: r, Kind: Required, Value: m})
	}
	out = append(out, others("object")...)
	return settle(s, out)
}

// Values returns the instances of s, the schema of a string or of an array
// of strings, named after path.
func Values(s map[string]any, path string) ([]Instance, error) {
	switch s["type"] {
	case "string":
		return stringValues(s, path)
	case "array":
		return arrayValues(s, path)
	}
	return nil, fmt.Errorf("schematest: %s: type %v is not generated", path, s["type"])
}

func stringValues(s map[string]any, path string) ([]Instance, error) {
	if err := known(s, "string", path); err != nil {
		return nil, err
	}
	var out []Instance
	add := func(k Kind, name string, v any) { out = append(out, Instance{Name: name, Kind: k, Value: v}) }
	if d, ok := s["default"]; ok {
		add(Default, fmt.Sprintf("the default %v", d), d)
	}
	if enum := asSlice(s["enum"]); len(enum) > 0 {
		for _, m := range enum {
			add(Enum, fmt.Sprintf("member %q", m), m)
		}
		first := enum[0].(string)
		for _, near := range []string{"", strings.ToUpper(first), first + " ", " " + first, first + "\n", first[:len(first)-1], "not-" + first} {
			if !slices.Contains(enum, any(near)) {
				add(Enum, fmt.Sprintf("not a member: %q", near), near)
			}
		}
	}
	lo, hasLo := number(s["minLength"])
	hi, hasHi := number(s["maxLength"])
	if hasLo || hasHi {
		lengths := []int{lo, lo + 1}
		if lo > 0 {
			lengths = append(lengths, lo-1)
		}
		if hasHi {
			lengths = append(lengths, hi-1, hi, hi+1)
		}
		slices.Sort(lengths)
		for _, n := range slices.Compact(lengths) {
			if n < 0 {
				continue
			}
			for _, f := range fillers {
				add(Length, fmt.Sprintf("%d × %q", n, f), strings.Repeat(f, n))
			}
		}
		if hasHi && hi >= len(fillers) {
			mixed := strings.Repeat(strings.Join(fillers, ""), hi/len(fillers)+1)
			for _, n := range []int{hi, hi + 1} {
				add(Length, fmt.Sprintf("%d mixed characters", n), firstRunes(mixed, n))
			}
		}
	}
	if p, ok := s["pattern"].(string); ok {
		ms, err := Matches(p)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			add(Pattern, fmt.Sprintf("matches the pattern: %q", clip(m)), m)
		}
		ms, err = Misses(p)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			add(Pattern, fmt.Sprintf("misses the pattern: %q", clip(m)), m)
		}
	}
	if len(asSlice(s["enum"])) == 0 {
		// The shortest valid non-empty string generated so far, and
		// each probe after it.
		var base string
		for _, x := range out {
			v, _ := x.Value.(string)
			if ok, _ := Valid(s, v); ok && v != "" && (base == "" || utf8.RuneCountInString(v) < utf8.RuneCountInString(base)) {
				base = v
			}
		}
		for _, r := range Probes {
			add(Character, fmt.Sprintf("with U+%04X", r), base+string(r))
		}
	}
	out = append(out, others("string")...)
	return settle(s, out)
}

func arrayValues(s map[string]any, path string) ([]Instance, error) {
	if err := known(s, "array", path); err != nil {
		return nil, err
	}
	items, ok := s["items"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schematest: %s: an array without one items schema is not generated", path)
	}
	itemValues, err := Values(items, path+"[]")
	if err != nil {
		return nil, err
	}
	var distinct []any
	for _, v := range itemValues {
		if v.Valid && !slices.ContainsFunc(distinct, func(d any) bool { return reflect.DeepEqual(d, v.Value) }) {
			distinct = append(distinct, v.Value)
		}
	}
	if len(distinct) < 2 {
		return nil, fmt.Errorf("schematest: %s: fewer than two valid items generated", path)
	}
	list := func(n int) []any {
		out := make([]any, n)
		for i := range out {
			out[i] = distinct[i%len(distinct)]
		}
		return out
	}
	var out []Instance
	add := func(k Kind, name string, v any) { out = append(out, Instance{Name: name, Kind: k, Value: v}) }
	if d, ok := s["default"]; ok {
		add(Default, fmt.Sprintf("the default %v", d), d)
	}
	lo, _ := number(s["minItems"])
	hi, hasHi := number(s["maxItems"])
	sizes := []int{lo, lo + 1, 2}
	if lo > 0 {
		sizes = append(sizes, lo-1)
	}
	if hasHi {
		sizes = append(sizes, hi, hi+1)
	}
	slices.Sort(sizes)
	for _, n := range slices.Compact(sizes) {
		add(Size, fmt.Sprintf("%d items", n), list(n))
	}
	add(Unique, "an item twice", []any{distinct[0], distinct[0]})
	add(Unique, "two items, reversed", []any{distinct[1], distinct[0]})
	for _, v := range itemValues {
		add(Items, "one item: "+v.Name, []any{v.Value})
	}
	out = append(out, others("array")...)
	return settle(s, out)
}

// others are values of every JSON type but t, null among them.
func others(t string) []Instance {
	all := []struct {
		typ string
		v   any
	}{
		{"null", nil}, {"boolean", true}, {"boolean", false}, {"number", 0.0}, {"number", 1.5},
		{"string", "x"}, {"array", []any{}}, {"array", []any{"x"}}, {"object", map[string]any{}},
	}
	var out []Instance
	for _, a := range all {
		if a.typ == t {
			continue
		}
		k := Type
		if a.v == nil {
			k = Null
		}
		out = append(out, Instance{Name: fmt.Sprintf("%s %v", a.typ, a.v), Kind: k, Value: a.v})
	}
	return out
}

// settle fills in Valid from s's keywords and drops repeated values.
func settle(s map[string]any, in []Instance) ([]Instance, error) {
	var out []Instance
	for _, x := range in {
		if slices.ContainsFunc(out, func(o Instance) bool { return reflect.DeepEqual(o.Value, x.Value) }) {
			continue
		}
		ok, err := Valid(s, x.Value)
		if err != nil {
			return nil, err
		}
		x.Valid = ok
		out = append(out, x)
	}
	return out, nil
}

// Valid says whether s's keywords accept v, by their definitions in JSON
// Schema (draft 2020-12; the same in draft-07 for these keywords): lengths
// in Unicode characters, patterns matching anywhere.
func Valid(s map[string]any, v any) (bool, error) {
	switch s["type"] {
	case "string":
		str, ok := v.(string)
		if !ok {
			return false, nil
		}
		n := utf8.RuneCountInString(str)
		if lo, ok := number(s["minLength"]); ok && n < lo {
			return false, nil
		}
		if hi, ok := number(s["maxLength"]); ok && n > hi {
			return false, nil
		}
		if enum := asSlice(s["enum"]); len(enum) > 0 && !slices.Contains(enum, any(str)) {
			return false, nil
		}
		if p, ok := s["pattern"].(string); ok {
			re, err := regexp.Compile(p)
			if err != nil {
				return false, err
			}
			return re.MatchString(str), nil
		}
		return true, nil
	case "array":
		list, ok := v.([]any)
		if !ok {
			return false, nil
		}
		if lo, ok := number(s["minItems"]); ok && len(list) < lo {
			return false, nil
		}
		if hi, ok := number(s["maxItems"]); ok && len(list) > hi {
			return false, nil
		}
		for i, x := range list {
			if s["uniqueItems"] == true && slices.ContainsFunc(list[:i], func(y any) bool { return reflect.DeepEqual(x, y) }) {
				return false, nil
			}
			if ok, err := Valid(s["items"].(map[string]any), x); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return false, nil
		}
		props, _ := s["properties"].(map[string]any)
		for _, r := range asSlice(s["required"]) {
			if _, ok := m[r.(string)]; !ok {
				return false, nil
			}
		}
		for k, x := range m {
			ps, ok := props[k].(map[string]any)
			if !ok {
				if s["additionalProperties"] == false {
					return false, nil
				}
				continue
			}
			if ok, err := Valid(ps, x); !ok || err != nil {
				return false, err
			}
		}
		return true, nil
	}
	return false, fmt.Errorf("schematest: type %v is not generated", s["type"])
}

// known refuses a schema that is not of type t or uses a keyword the
// generator does not know.
func known(s map[string]any, t, path string) error {
	if s["type"] != t {
		return fmt.Errorf("schematest: %s: type %v, want %s", path, s["type"], t)
	}
	for k := range s {
		if !slices.Contains(keywords[t], k) {
			return fmt.Errorf("schematest: %s: keyword %q is not generated; teach schematest its boundaries", path, k)
		}
	}
	return nil
}

// number reads a JSON number that is an integer, as encoding/json decodes
// it into any (float64) or as Go code writes it (int).
func number(v any) (int, bool) {
	switch x := v.(type) {
	case float64:
		return int(x), x == float64(int(x))
	case int:
		return x, true
	}
	return 0, false
}

// asSlice reads a JSON array, decoded ([]any) or written in Go ([]string).
func asSlice(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out
	}
	return nil
}

func firstRunes(s string, n int) string {
	i := 0
	for range n {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return s[:i]
}

// empty reports whether v is an empty string or list.
func empty(v any) bool {
	switch x := v.(type) {
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	}
	return false
}

// clip shortens a long string for an instance's name.
func clip(s string) string {
	if utf8.RuneCountInString(s) <= 40 {
		return s
	}
	return firstRunes(s, 40) + "…"
}
