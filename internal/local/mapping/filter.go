package mapping

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// MatchFilter reports whether event (a record as the event source mapping
// sees it, in JSON) matches the Lambda event filter pattern, as Lambda
// decides before invoking the function
// (https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html):
// every field the pattern names must match; a list of values matches when
// the event's value equals any of them; a nested object descends into the
// event's object; an event value that is a list matches when any element
// does. Of the comparison operators it knows only "exists"; any other
// ("prefix", "anything-but", "numeric", ...) is an error, so that a pattern
// this function cannot judge is never taken as matching or not.
func MatchFilter(pattern string, event []byte) (bool, error) {
	var p map[string]any
	dec := json.NewDecoder(strings.NewReader(pattern))
	dec.UseNumber()
	if err := dec.Decode(&p); err != nil {
		return false, fmt.Errorf("filter pattern is not a JSON object: %w", err)
	}
	var ev any
	dec = json.NewDecoder(strings.NewReader(string(event)))
	dec.UseNumber()
	if err := dec.Decode(&ev); err != nil {
		return false, fmt.Errorf("event is not JSON: %w", err)
	}
	if len(p) == 0 {
		return false, errors.New("empty filter pattern")
	}
	return matchObject(p, ev, "")
}

func matchObject(p map[string]any, ev any, path string) (bool, error) {
	obj, _ := ev.(map[string]any)
	all := true
	for k, want := range p {
		at := path + "." + k
		v, present := obj[k]
		switch w := want.(type) {
		case map[string]any:
			if !present {
				// A nested pattern under a missing field can still hold
				// only if it asks for absence; judge it against nothing.
				ok, err := matchObject(w, nil, at)
				if err != nil {
					return false, err
				}
				all = all && ok
				continue
			}
			ok, err := matchObject(w, v, at)
			if err != nil {
				return false, err
			}
			all = all && ok
		case []any:
			ok, err := matchValues(w, v, present, at)
			if err != nil {
				return false, err
			}
			all = all && ok
		default:
			return false, fmt.Errorf("pattern %s: %v is neither an object nor a list of values", at, want)
		}
	}
	return all, nil
}

// matchValues matches one event value against a list of pattern values.
func matchValues(want []any, v any, present bool, at string) (bool, error) {
	if len(want) == 0 {
		return false, fmt.Errorf("pattern %s: empty list", at)
	}
	for _, w := range want {
		if op, ok := w.(map[string]any); ok {
			if len(op) != 1 {
				return false, fmt.Errorf("pattern %s: operator %v", at, op)
			}
			e, ok := op["exists"].(bool)
			if !ok {
				return false, fmt.Errorf("pattern %s: operator %v is not supported here", at, op)
			}
			if e == present {
				return true, nil
			}
			continue
		}
		if !present {
			continue
		}
		if list, ok := v.([]any); ok {
			for _, e := range list {
				if equalScalar(w, e) {
					return true, nil
				}
			}
			continue
		}
		if equalScalar(w, v) {
			return true, nil
		}
	}
	return false, nil
}

func equalScalar(w, v any) bool {
	switch w.(type) {
	case map[string]any, []any:
		return false
	}
	switch v.(type) {
	case map[string]any, []any:
		return false
	}
	return fmt.Sprint(w) == fmt.Sprint(v) && sameKind(w, v)
}

func sameKind(a, b any) bool {
	switch a.(type) {
	case string:
		_, ok := b.(string)
		return ok
	case json.Number:
		_, ok := b.(json.Number)
		return ok
	case bool:
		_, ok := b.(bool)
		return ok
	case nil:
		return b == nil
	}
	return false
}
