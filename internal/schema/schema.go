package schema

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/oncecall/oncecall/internal/canonjson"
)

// Kind is the JSON type of a parameter.
type Kind int

const (
	// String is a JSON string.
	String Kind = iota
	// StringList is a JSON array of strings.
	StringList
)

// Param is one named argument.
type Param struct {
	Name        string
	Description string
	Kind        Kind
	Required    bool
	// MinLength and MaxLength bound a string, or each string of a list, in
	// Unicode characters. MaxLength 0 means no bound.
	MinLength, MaxLength int
	// Enum, when set, lists the only accepted values.
	Enum []string
	// Pattern, when set, is a regular expression the whole string must match.
	Pattern *Pattern
	// PatternHint says in words what Pattern accepts.
	PatternHint string
	// MaxItems bounds a list; 0 means no bound.
	MaxItems int
	// Multiline allows line breaks and tabs in a string; other control
	// characters are always refused.
	Multiline bool
	// Default, when not empty, is the value an optional String parameter
	// takes when a call leaves it out: Normalize puts it in, and the JSON
	// Schema publishes it as "default". It must be a value the parameter
	// accepts.
	Default string
	// Set declares a StringList whose order carries no meaning, such as
	// labels: its items must be distinct (the JSON Schema's uniqueItems)
	// and Normalize puts them in one order. A list that is not a set keeps
	// its order and may repeat an item.
	Set bool
}

// Pattern is a regular expression, compiled on first use so that declaring
// one does no work at start-up. It must be valid: the first use panics
// otherwise, as regexp.MustCompile does.
type Pattern struct {
	src string
	re  func() *regexp.Regexp
}

// NewPattern returns the Pattern of the regular expression src.
func NewPattern(src string) *Pattern {
	return &Pattern{src: src, re: sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(src) })}
}

// MatchString reports whether s matches.
func (p *Pattern) MatchString(s string) bool { return p.re().MatchString(s) }

// String returns the regular expression's source.
func (p *Pattern) String() string { return p.src }

// Function is a Protocol Function: its name, what it does, and its
// parameters.
type Function struct {
	Name        string
	Description string
	Params      []Param
}

// Violation is one problem with the arguments, phrased as what to fix.
type Violation struct {
	Param   string
	Message string
}

// Validate checks args against f's parameters and returns every problem found,
// in parameter order, unknown arguments last. It returns nil for valid args.
func (f *Function) Validate(args map[string]any) []Violation {
	var out []Violation
	for i := range f.Params {
		p := &f.Params[i]
		v, present := args[p.Name]
		if !present || v == nil {
			if p.Required {
				out = append(out, Violation{p.Name, fmt.Sprintf("%s is required: %s", p.Name, p.Description)})
			}
			continue
		}
		if msg := p.check(v); msg != "" {
			out = append(out, Violation{p.Name, msg})
		}
	}
	var unknown []string
	for k := range args {
		if f.param(k) == nil {
			unknown = append(unknown, canonjson.Clip(k))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		out = append(out, Violation{unknown[0], fmt.Sprintf("%s %s not accepted; the accepted arguments are %s",
			quoteList(unknown), plural(len(unknown), "is", "are"), quoteList(f.paramNames()))})
	}
	return out
}

// Normalize validates args and returns them as the function will act on
// them; it returns nil and every problem Validate finds when they are
// invalid. Two calls whose arguments normalize alike mean the same thing:
//
//   - a member of an optional parameter that is null, an empty string or
//     an empty list is absent;
//   - an absent parameter with a Default takes it;
//   - the items of a Set are put in one order (by Unicode code point);
//   - everything else is kept as sent: strings are neither trimmed nor
//     case-folded, and a list that is not a set keeps its order.
//
// The result holds only declared parameters, as strings and []any of
// strings, and shares nothing with args. Normalizing it again returns it
// unchanged.
func (f *Function) Normalize(args map[string]any) (map[string]any, []Violation) {
	if v := f.Validate(args); len(v) > 0 {
		return nil, v
	}
	out := make(map[string]any, len(f.Params))
	for i := range f.Params {
		p := &f.Params[i]
		v := args[p.Name]
		if !p.Required && empty(v) {
			if p.Default != "" {
				out[p.Name] = p.Default
			}
			continue
		}
		if p.Kind != StringList {
			out[p.Name] = v
			continue
		}
		list := v.([]any) // Validate checked it
		items := make([]string, len(list))
		for j, e := range list {
			items[j] = e.(string)
		}
		if p.Set {
			slices.Sort(items)
		}
		norm := make([]any, len(items))
		for j, s := range items {
			norm[j] = s
		}
		out[p.Name] = norm
	}
	return out, nil
}

// empty reports whether v, a valid argument, means "absent" for an
// optional parameter: null, an empty string, an empty list.
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	}
	return false
}

// paramNames lists the parameter names in declaration order.
func (f *Function) paramNames() []string {
	names := make([]string, len(f.Params))
	for i, p := range f.Params {
		names[i] = p.Name
	}
	return names
}

func (f *Function) param(name string) *Param {
	for i := range f.Params {
		if f.Params[i].Name == name {
			return &f.Params[i]
		}
	}
	return nil
}

func (p *Param) check(v any) string {
	switch p.Kind {
	case StringList:
		list, ok := v.([]any)
		if !ok {
			return fmt.Sprintf("%s must be an array of strings, not %s", p.Name, canonjson.Kind(v))
		}
		if p.MaxItems > 0 && len(list) > p.MaxItems {
			return fmt.Sprintf("%s has %d items; send at most %d", p.Name, len(list), p.MaxItems)
		}
		seen := make(map[string]bool, len(list))
		for i, e := range list {
			s, ok := e.(string)
			if !ok {
				return fmt.Sprintf("%s[%d] must be a string, not %s", p.Name, i, canonjson.Kind(e))
			}
			if msg := p.checkString(fmt.Sprintf("%s[%d]", p.Name, i), s); msg != "" {
				return msg
			}
			if p.Set && seen[s] {
				return fmt.Sprintf("%s[%d] repeats %q; send each value once", p.Name, i, canonjson.Clip(s))
			}
			seen[s] = true
		}
		return ""
	default:
		s, ok := v.(string)
		if !ok {
			return fmt.Sprintf("%s must be a string, not %s", p.Name, canonjson.Kind(v))
		}
		return p.checkString(p.Name, s)
	}
}

func (p *Param) checkString(at, s string) string {
	n := utf8.RuneCountInString(s)
	if n < p.MinLength {
		if n == 0 {
			return fmt.Sprintf("%s is empty; %s", at, lower(p.Description))
		}
		return fmt.Sprintf("%s is %d characters; send at least %d", at, n, p.MinLength)
	}
	if p.MaxLength > 0 && n > p.MaxLength {
		return fmt.Sprintf("%s is %d characters; shorten it to at most %d", at, n, p.MaxLength)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7F || (r >= 0x80 && r < 0xA0) {
			if p.Multiline && (r == '\n' || r == '\t' || r == '\r') {
				continue
			}
			if p.Multiline {
				return fmt.Sprintf("%s contains a control character (U+%04X); remove it", at, r)
			}
			return fmt.Sprintf("%s must be a single line without control characters (found U+%04X)", at, r)
		}
	}
	if len(p.Enum) > 0 && !slices.Contains(p.Enum, s) {
		return fmt.Sprintf("%s %q is not one of %s", at, canonjson.Clip(s), quoteList(p.Enum))
	}
	if p.Pattern != nil && !p.Pattern.MatchString(s) {
		return fmt.Sprintf("%s %q is not %s", at, canonjson.Clip(s), p.PatternHint)
	}
	return ""
}

// JSONSchema returns the JSON Schema of f's arguments, as AIVAX's
// contentFormat expects it.
func (f *Function) JSONSchema() map[string]any {
	props := make(map[string]any, len(f.Params))
	required := []string{}
	for _, p := range f.Params {
		props[p.Name] = p.jsonSchema()
		if p.Required {
			required = append(required, p.Name)
		}
	}
	return map[string]any{
		"type":                 "object",
		"properties":           props,
		"required":             required,
		"additionalProperties": false,
	}
}

func (p *Param) jsonSchema() map[string]any {
	str := map[string]any{"type": "string"}
	if p.MinLength > 0 {
		str["minLength"] = p.MinLength
	}
	if p.MaxLength > 0 {
		str["maxLength"] = p.MaxLength
	}
	if len(p.Enum) > 0 {
		str["enum"] = p.Enum
	}
	switch {
	case p.Pattern != nil:
		str["pattern"] = p.Pattern.String()
	case len(p.Enum) == 0:
		// What the validator refuses besides lengths, enumerations and
		// patterns, said in the schema: control characters.
		str["pattern"] = controlPattern(p.Multiline)
	}
	if p.Kind == StringList {
		s := map[string]any{"type": "array", "items": str, "description": p.Description}
		if p.Set {
			s["uniqueItems"] = true
		}
		if p.MaxItems > 0 {
			s["maxItems"] = p.MaxItems
		}
		return s
	}
	if p.Default != "" {
		str["default"] = p.Default
	}
	str["description"] = p.Description
	return str
}

// Patterns the JSON Schema gives a string parameter without an
// enumeration or a pattern of its own: the characters checkString refuses
// (C0 controls, DEL and C1 controls; a multi-line string may hold tabs and
// line breaks). They mean the same in ECMA-262, the dialect JSON Schema
// names, and in Go's regexp.
const (
	singleLinePattern = `^[^\x00-\x1F\x7F-\x9F]*$`
	multiLinePattern  = `^[^\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F]*$`
)

func controlPattern(multiline bool) string {
	if multiline {
		return multiLinePattern
	}
	return singleLinePattern
}

func quoteList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = fmt.Sprintf("%q", x)
	}
	return strings.Join(q, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func lower(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
