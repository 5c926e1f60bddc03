package idempotency_test

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"unicode"

	"pgregory.net/rapid"

	"github.com/oncecall/oncecall/internal/canonjson"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/schema"
	"github.com/oncecall/oncecall/internal/testing/jsontest"
	"github.com/oncecall/oncecall/internal/testing/schematest"
	"github.com/oncecall/oncecall/internal/testing/suitetest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// maxDrawnRunes bounds the strings the property draws; the bounds
// themselves are the agreement test's business.
const maxDrawnRunes = 12

// visible draws the characters a model writes: letters, digits,
// punctuation, symbols and spaces, NBSP among them; no control characters.
var visible = rapid.RuneFrom(nil, unicode.L, unicode.N, unicode.P, unicode.S, unicode.Zs)

// drawValue draws a valid, non-empty value of p.
func drawValue(t *rapid.T, p *schema.Param, label string) any {
	str := func(label string) string {
		switch {
		case len(p.Enum) > 0:
			return rapid.SampledFrom(p.Enum).Draw(t, label)
		case p.Pattern != nil:
			ms, err := schematest.Matches(p.Pattern.String())
			if err != nil {
				t.Fatal(err)
			}
			return rapid.SampledFrom(ms).Draw(t, label)
		}
		hi := maxDrawnRunes
		if p.MaxLength > 0 {
			hi = min(hi, p.MaxLength)
		}
		runes := visible
		if p.Multiline {
			runes = rapid.OneOf(visible, rapid.SampledFrom([]rune{'\n', '\t', '\r'}))
		}
		return rapid.StringOfN(runes, max(p.MinLength, 1), hi, -1).Draw(t, label)
	}
	if p.Kind != schema.StringList {
		return str(label)
	}
	n := rapid.IntRange(1, min(p.MaxItems, 4)).Draw(t, label+" size")
	var items []any
	for len(items) < n {
		s := str(label + " item")
		if !p.Set || !slices.Contains(items, any(s)) {
			items = append(items, s)
		}
	}
	return items
}

// drawArgs draws valid arguments of f: every required parameter, some
// optional ones.
func drawArgs(t *rapid.T, f *schema.Function) map[string]any {
	args := map[string]any{}
	for i := range f.Params {
		p := &f.Params[i]
		if p.Required || rapid.Bool().Draw(t, p.Name+" present") {
			args[p.Name] = drawValue(t, p, p.Name)
		}
	}
	return args
}

// emptyAccepted says whether an empty value of p is valid: an empty list
// always; an empty string when nothing requires a character.
func emptyAccepted(p *schema.Param) any {
	if p.Kind == schema.StringList {
		return []any{}
	}
	if p.MinLength == 0 && len(p.Enum) == 0 && p.Pattern == nil {
		return ""
	}
	return nil
}

// respell writes args otherwise without changing their meaning: null or
// an empty value for an absent optional parameter, its default spelled
// out or left out, a set in another order. Member order is the body's.
func respell(t *rapid.T, f *schema.Function, args map[string]any) map[string]any {
	out := maps.Clone(args)
	for i := range f.Params {
		p := &f.Params[i]
		v, present := out[p.Name]
		switch {
		case !present && !p.Required:
			ways := []string{"leave out", "null"}
			if emptyAccepted(p) != nil {
				ways = append(ways, "empty")
			}
			if p.Default != "" {
				ways = append(ways, "default")
			}
			switch rapid.SampledFrom(ways).Draw(t, p.Name+" respelled") {
			case "null":
				out[p.Name] = nil
			case "empty":
				out[p.Name] = emptyAccepted(p)
			case "default":
				out[p.Name] = p.Default
			}
		case present && p.Default != "" && v == p.Default:
			if rapid.Bool().Draw(t, p.Name+" default left out") {
				delete(out, p.Name)
			}
		case present && p.Set:
			out[p.Name] = rapid.Permutation(v.([]any)).Draw(t, p.Name+" order")
		}
	}
	return out
}

// change changes the meaning of args by one parameter: another value for
// one that has a value (its default when left out), or one more or one
// fewer item of a set. ok is false when the drawn parameter cannot change
// (an enumeration of one).
func change(t *rapid.T, f *schema.Function, args map[string]any) (out map[string]any, ok bool) {
	p := &f.Params[rapid.IntRange(0, len(f.Params)-1).Draw(t, "changed parameter")]
	out = maps.Clone(args)
	cur, present := args[p.Name]
	if !present && p.Default != "" {
		cur, present = p.Default, true
	}
	if !present {
		out[p.Name] = drawValue(t, p, p.Name+" added")
		return out, true
	}
	if p.Kind == schema.StringList {
		items := cur.([]any)
		if len(items) > 1 && rapid.Bool().Draw(t, "remove an item") {
			out[p.Name] = items[1:]
			return out, true
		}
		if p.MaxItems > 0 && len(items) >= p.MaxItems {
			return nil, false
		}
		extra := drawValue(t, p, p.Name+" extra").([]any)[0]
		if slices.Contains(items, extra) {
			return nil, false
		}
		out[p.Name] = append(slices.Clone(items), extra)
		return out, true
	}
	next := drawValue(t, p, p.Name+" changed")
	if next == cur {
		return nil, false
	}
	out[p.Name] = next
	return out, true
}

// callBody is an AIVAX body calling f with args, written by jsontest with
// members in an order drawn from seed.
func callBody(f string, args map[string]any, seed uint64) []byte {
	var b bytes.Buffer
	b.WriteString(`{"function":{"name":"` + f + `","content":`)
	jsontest.Scramble(&b, args, rand.New(rand.NewPCG(seed, seed+1)))
	b.WriteString(`},"context":{"externalUserId":"user-a","metadata":{"request_id":"r-1"}}}`)
	return b.Bytes()
}

// keyOf decodes a body and keys it as the handler does: the arguments
// normalized by the function, then derived.
func keyOf(t *rapid.T, f *schema.Function, pol idempotency.Policy, body []byte) (idempotency.Key, map[string]any) {
	req, p := protocol.Decode(body)
	if p != nil {
		t.Fatalf("Decode(%s): %v", body, p)
	}
	args, v := f.Normalize(req.Arguments)
	if len(v) > 0 {
		t.Fatalf("Normalize(%s): %v", body, v)
	}
	k, err := idempotency.Derive(pol, idempotency.Operation{Tenant: "tenant-a", RequestID: "r-1", Function: f.Name, Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	return k, args
}

// TestPropertySameMeaningSameKey: for each function, valid arguments and
// any respelling of them — members in another order, null or empty for
// what is left out, a default spelled out or left out, a set in another
// order — get one key and one fingerprint under either policy;
// normalizing is idempotent; and a change of meaning changes the
// fingerprint, and the key under the arguments policy.
func TestPropertySameMeaningSameKey(t *testing.T) {
	suitetest.Check(t, func(t *rapid.T) {
		f := rapid.SampledFrom([]*schema.Function{ticket.Create, ticket.Get}).Draw(t, "function")
		pol := rapid.SampledFrom([]idempotency.Policy{idempotency.PolicyArguments, idempotency.PolicyRequest}).Draw(t, "policy")
		args := drawArgs(t, f)
		again := respell(t, f, args)
		s1, s2 := rapid.Uint64().Draw(t, "s1"), rapid.Uint64().Draw(t, "s2")
		a, norm := keyOf(t, f, pol, callBody(f.Name, args, s1))
		b, _ := keyOf(t, f, pol, callBody(f.Name, again, s2))
		if a.ID != b.ID || a.Fingerprint != b.Fingerprint || !bytes.Equal(a.Arguments, b.Arguments) {
			t.Fatalf("same meaning, another key:\n%s\n%s", callBody(f.Name, args, s1), callBody(f.Name, again, s2))
		}
		twice, v := f.Normalize(norm)
		if c, _ := canonjson.Marshal(twice); len(v) > 0 || !bytes.Equal(c, a.Arguments) {
			t.Fatalf("Normalize is not idempotent: %s, then %s %v", a.Arguments, c, v)
		}
		changed, ok := change(t, f, args)
		if !ok {
			return
		}
		c, _ := keyOf(t, f, pol, callBody(f.Name, changed, s1))
		if c.Fingerprint == a.Fingerprint || (pol == idempotency.PolicyArguments) == (c.ID == a.ID) {
			t.Fatalf("policy %s: a changed meaning gave key %s (was %s), fingerprint %s (was %s):\n%s\n%s",
				pol, c.ID, a.ID, c.Fingerprint, a.Fingerprint, a.Arguments, c.Arguments)
		}
	})
}
