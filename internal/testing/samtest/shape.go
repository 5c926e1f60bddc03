package samtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// ShapeKind is how a ShapeRule lets an event depart from the generated one.
type ShapeKind int

const (
	// MayOmit means the generated event's member at the path may be absent
	// (with everything under it); where an event has it, it is compared.
	MayOmit ShapeKind = iota + 1
	// MayAdd means an event may have a member at the path that the generated
	// event lacks, of JSON type Type; nothing under it is compared.
	MayAdd
	// AnyKeys means the object at the path has members named by data (HTTP
	// headers): an event's members may have any names, and each must have
	// the shape of one of the generated event's members there.
	AnyKeys
	// Attributes means the object at the path is a DynamoDB item as a stream
	// record carries it (Keys, NewImage, OldImage): any attribute names,
	// each value a well-formed AttributeValue (a single member S, N, B,
	// SS, NS, BS, M, L, NULL or BOOL of its JSON type, M and L nested).
	Attributes
)

// ShapeRule is one allowed departure from the generated event's shape, at
// one path. Paths name object members with dots and array elements with
// "[]" ("Records[].dynamodb.Keys"); members of an AnyKeys or Attributes
// object are ".*".
type ShapeRule struct {
	Kind ShapeKind
	// Type is the JSON type of the member a MayAdd rule allows: "string",
	// "number", "boolean", "null", "object" or "array".
	Type string
	// Why is the reason our events may depart there, in a sentence.
	Why string
}

// ShapeRules are the departures allowed from one generated event, by path.
type ShapeRules map[string]ShapeRule

// DecodeShape decodes a JSON event for CompareShape and ShapePaths,
// keeping numbers as json.Number.
func DecodeShape(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("more than one JSON value")
	}
	return v, nil
}

// JSONType is the JSON type of a decoded value: "object", "array",
// "string", "number", "boolean" or "null".
func JSONType(v any) string {
	switch v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number, float64:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// CompareShape reports every way event's shape departs from generated's
// that rules do not allow: each member of generated must be in event at
// the same path with the same JSON type, and event must have no member
// generated lacks. Values are never compared. Each element of an array in
// event must have the shape of one of the elements of generated's array
// there (a stream batch's INSERT record that of the generated INSERT
// record); when none fits, the closest one's differences are reported.
// used names the MayOmit and MayAdd rules that allowed something.
func CompareShape(generated, event any, rules ShapeRules) (diffs []string, used map[string]bool) {
	c := shapeCmp{rules: rules, used: map[string]bool{}}
	diffs = c.compare("", generated, event)
	return diffs, c.used
}

type shapeCmp struct {
	rules ShapeRules
	used  map[string]bool
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func show(path string) string {
	if path == "" {
		return "the event"
	}
	return path
}

func (c *shapeCmp) compare(path string, g, e any) []string {
	if gt, et := JSONType(g), JSONType(e); gt != et {
		return []string{fmt.Sprintf("%s: %s where the generated event has %s", show(path), et, gt)}
	}
	if r, ok := c.rules[path]; ok {
		switch r.Kind {
		case AnyKeys:
			if g, ok := g.(map[string]any); ok {
				return c.anyKeys(path, g, e.(map[string]any))
			}
			return []string{fmt.Sprintf("%s: an AnyKeys rule on %s, not on an object", path, JSONType(g))}
		case Attributes:
			var out []string
			for _, v := range []any{g, e} {
				out = append(out, attributeMap(path, v)...)
			}
			return out
		}
	}
	switch g := g.(type) {
	case map[string]any:
		return c.object(path, g, e.(map[string]any))
	case []any:
		return c.array(path, g, e.([]any))
	}
	return nil
}

func (c *shapeCmp) object(path string, g, e map[string]any) []string {
	var out []string
	keys := slices.Sorted(maps.Keys(g))
	for k := range e {
		if _, ok := g[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range slices.Compact(keys) {
		p := join(path, k)
		gv, inG := g[k]
		ev, inE := e[k]
		r, ruled := c.rules[p]
		switch {
		case inG && inE:
			out = append(out, c.compare(p, gv, ev)...)
		case inG && ruled && r.Kind == MayOmit:
			c.used[p] = true
		case inG:
			out = append(out, fmt.Sprintf("%s: missing (the generated event has a %s)", p, JSONType(gv)))
		case ruled && r.Kind == MayAdd:
			c.used[p] = true
			if JSONType(ev) != r.Type {
				out = append(out, fmt.Sprintf("%s: %s where an added %s is allowed", p, JSONType(ev), r.Type))
			}
		default:
			out = append(out, fmt.Sprintf("%s: a %s the generated event does not have", p, JSONType(ev)))
		}
	}
	return out
}

// closest compares e with each of candidates at path and keeps the first
// that fits, else the one with the fewest differences.
func (c *shapeCmp) closest(path string, candidates []any, e any) []string {
	var best []string
	var bestUsed map[string]bool
	for i, g := range candidates {
		try := shapeCmp{rules: c.rules, used: map[string]bool{}}
		d := try.compare(path, g, e)
		if i == 0 || len(d) < len(best) {
			best, bestUsed = d, try.used
		}
		if len(d) == 0 {
			break
		}
	}
	maps.Copy(c.used, bestUsed)
	return best
}

func (c *shapeCmp) array(path string, g, e []any) []string {
	if len(e) == 0 {
		return nil
	}
	if len(g) == 0 {
		return []string{fmt.Sprintf("%s: the generated event's array is empty, so its elements cannot be compared", path)}
	}
	var out []string
	for i, el := range e {
		for _, d := range c.closest(path+"[]", g, el) {
			out = append(out, fmt.Sprintf("(element %d) %s", i, d))
		}
	}
	return out
}

func (c *shapeCmp) anyKeys(path string, g, e map[string]any) []string {
	if len(g) == 0 {
		return []string{fmt.Sprintf("%s: the generated event's object is empty, so its members cannot be compared", path)}
	}
	members := make([]any, 0, len(g))
	for _, k := range slices.Sorted(maps.Keys(g)) {
		members = append(members, g[k])
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(e)) {
		for _, d := range c.closest(path+".*", members, e[k]) {
			out = append(out, fmt.Sprintf("(member %q) %s", k, d))
		}
	}
	return out
}

// attributeTypes is each AttributeValue tag's JSON type, and for sets and
// lists that of their elements ("" for an AttributeValue).
var attributeTypes = map[string][2]string{
	"S": {"string"}, "N": {"string"}, "B": {"string"},
	"SS": {"array", "string"}, "NS": {"array", "string"}, "BS": {"array", "string"},
	"M": {"object"}, "L": {"array", ""}, "NULL": {"boolean"}, "BOOL": {"boolean"},
}

func attributeMap(path string, v any) []string {
	m, ok := v.(map[string]any)
	if !ok {
		return []string{fmt.Sprintf("%s: %s, not an attribute map", path, JSONType(v))}
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, attributeValue(fmt.Sprintf("%s.*(%q)", path, k), m[k])...)
	}
	return out
}

func attributeValue(path string, v any) []string {
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return []string{fmt.Sprintf("%s: %s, not an AttributeValue (an object of one member named by its type)", path, shapeOf(v))}
	}
	for tag, x := range m {
		want, known := attributeTypes[tag]
		switch {
		case !known:
			return []string{fmt.Sprintf("%s: AttributeValue type %q is none of DynamoDB's", path, tag)}
		case JSONType(x) != want[0]:
			return []string{fmt.Sprintf("%s: %s holds a %s, want a %s", path, tag, JSONType(x), want[0])}
		case tag == "M":
			return attributeMap(path+".M", x)
		case tag == "NULL" && x != true:
			return []string{fmt.Sprintf("%s: NULL is false, DynamoDB sends true", path)}
		case want[0] == "array":
			var out []string
			for i, el := range x.([]any) {
				p := fmt.Sprintf("%s.%s[%d]", path, tag, i)
				if want[1] == "" {
					out = append(out, attributeValue(p, el)...)
				} else if JSONType(el) != want[1] {
					out = append(out, fmt.Sprintf("%s: a %s, want a %s", p, JSONType(el), want[1]))
				}
			}
			return out
		}
	}
	return nil
}

func shapeOf(v any) string {
	if m, ok := v.(map[string]any); ok {
		return fmt.Sprintf("an object of members %s", strings.Join(slices.Sorted(maps.Keys(m)), ", "))
	}
	return "a " + JSONType(v)
}

// ShapePaths lists the paths of v and the JSON type at each, as
// CompareShape names them under rules (an AnyKeys or Attributes object's
// members as one ".*" path, not descended into for Attributes).
func ShapePaths(v any, rules ShapeRules) map[string]string {
	out := map[string]string{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		out[path] = JSONType(v)
		r := rules[path]
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				switch r.Kind {
				case Attributes:
					out[path+".*"] = "object"
				case AnyKeys:
					walk(path+".*", x)
				default:
					walk(join(path, k), x)
				}
			}
		case []any:
			for _, x := range v {
				walk(path+"[]", x)
			}
		}
	}
	walk("", v)
	delete(out, "")
	return out
}
