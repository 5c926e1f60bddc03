package idempotency_test

import (
	"bytes"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/testing/jsontest"
	"github.com/oncecall/oncecall/internal/testing/suitetest"
)

// argValue generates argument values as a model might send them.
func argValue(depth int) *rapid.Generator[any] {
	scalars := []*rapid.Generator[any]{
		rapid.Map(rapid.String(), func(s string) any { return s }),
		rapid.Map(rapid.IntRange(-1000, 1000), func(i int) any { return float64(i) }),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Just[any](nil),
	}
	if depth == 0 {
		return rapid.OneOf(scalars...)
	}
	inner := argValue(depth - 1)
	return rapid.OneOf(append(scalars,
		rapid.Map(rapid.SliceOfN(inner, 0, 4), func(a []any) any { return a }),
		rapid.Map(rapid.MapOfN(rapid.StringN(1, 8, 32), inner, 0, 4), func(m map[string]any) any { return m }),
	)...)
}

func body(args map[string]any, seed uint64) []byte {
	var b bytes.Buffer
	b.WriteString(`{"function":{"name":"create_ticket","content":`)
	jsontest.Scramble(&b, args, rand.New(rand.NewPCG(seed, seed+1)))
	b.WriteString(`},"context":{"externalUserId":"user-a","metadata":{"request_id":"r-1"}}}`)
	return b.Bytes()
}

// TestPropertyKeyIgnoresMemberOrder sends the same arguments as two bodies
// with members in different orders: the decoded calls get one operation key.
// A changed value gets another key.
func TestPropertyKeyIgnoresMemberOrder(t *testing.T) {
	suitetest.Check(t, func(t *rapid.T) {
		args := rapid.MapOfN(rapid.StringN(1, 8, 32), argValue(2), 1, 6).Draw(t, "args")
		s1, s2 := rapid.Uint64().Draw(t, "s1"), rapid.Uint64().Draw(t, "s2")
		pol := rapid.SampledFrom([]idempotency.Policy{idempotency.PolicyArguments, idempotency.PolicyRequest}).Draw(t, "policy")
		key := func(b []byte) idempotency.Key {
			req, p := protocol.Decode(b)
			if p != nil {
				t.Fatalf("Decode(%s): %v", b, p)
			}
			rid, p := req.RequestID()
			if p != nil {
				t.Fatalf("RequestID of %s: %v", b, p)
			}
			k, err := idempotency.Derive(pol, idempotency.Operation{Tenant: "tenant-a", RequestID: rid, Function: req.Function, Arguments: req.Arguments})
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
		a, b := key(body(args, s1)), key(body(args, s2))
		if a.ID != b.ID || a.Fingerprint != b.Fingerprint || !bytes.Equal(a.Arguments, b.Arguments) {
			t.Fatalf("member order changed the key:\n%s\n%s", body(args, s1), body(args, s2))
		}
		// Change one top-level value: the fingerprint always changes, and
		// so does the key under the arguments policy. The member is drawn
		// from the sorted names, so that the seed alone decides it.
		name := rapid.SampledFrom(slices.Sorted(maps.Keys(args))).Draw(t, "changed")
		changed := make(map[string]any, len(args))
		for k, v := range args {
			changed[k] = v
		}
		changed[name] = []any{"changed", args[name]}
		c := key(body(changed, s1))
		if c.Fingerprint == a.Fingerprint || (pol == idempotency.PolicyArguments) == (c.ID == a.ID) {
			t.Fatalf("policy %s: a changed value gave key %s (was %s), fingerprint %s (was %s)", pol, c.ID, a.ID, c.Fingerprint, a.Fingerprint)
		}
	})
}
