package canonjson

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/oncecall/oncecall/internal/testing/jsontest"
	"github.com/oncecall/oncecall/internal/testing/suitetest"
)

// jsonValue generates values of the types Parse returns, nested to depth.
func jsonValue(depth int) *rapid.Generator[any] {
	scalars := []*rapid.Generator[any]{
		rapid.Just[any](nil),
		rapid.Map(rapid.Bool(), func(b bool) any { return b }),
		rapid.Map(rapid.String(), func(s string) any { return s }),
		rapid.Map(rapid.StringOf(rapid.RuneFrom([]rune{'"', '\\', '/', '\n', 0, 0x1f, 0x7f, 0x2028, 0xe000, 0xfb33, 0x1f600, 0x10ffff})), func(s string) any { return s }),
		rapid.Map(rapid.Int64Range(-MaxSafeInteger, MaxSafeInteger), func(i int64) any { return float64(i) }),
		rapid.Map(rapid.Float64().Filter(acceptable), func(f float64) any { return f }),
	}
	if depth == 0 {
		return rapid.OneOf(scalars...)
	}
	inner := jsonValue(depth - 1)
	return rapid.OneOf(append(scalars,
		rapid.Map(rapid.SliceOfN(inner, 0, 5), func(a []any) any { return a }),
		rapid.Map(rapid.MapOfN(rapid.String(), inner, 0, 5), func(m map[string]any) any { return m }),
	)...)
}

// acceptable reports whether Parse takes f: finite, and not an integer
// beyond the safe range that would be written as digits.
func acceptable(f float64) bool {
	a := math.Abs(f)
	return !math.IsInf(f, 0) && !(a > MaxSafeInteger && a < 1e21)
}

// TestPropertyRoundTrip: the canonical form of any value parses back to the
// same value, and canonicalizing it again changes nothing.
func TestPropertyRoundTrip(t *testing.T) {
	suitetest.Check(t, func(t *rapid.T) {
		v := jsonValue(3).Draw(t, "v")
		canon, err := Marshal(v)
		if err != nil {
			t.Fatalf("Marshal: %v", err)
		}
		back, err := Parse(canon, Limits{})
		if err != nil {
			t.Fatalf("Parse(%s): %v", canon, err)
		}
		if !reflect.DeepEqual(back, v) {
			t.Fatalf("round trip changed the value:\n%#v\n%#v", v, back)
		}
		again, err := Marshal(back)
		if err != nil || !bytes.Equal(again, canon) {
			t.Fatalf("canonical form is not a fixed point:\n%s\n%s", canon, again)
		}
		if !utf8.Valid(canon) || !json.Valid(canon) {
			t.Fatalf("canonical form is not valid UTF-8 JSON: %q", canon)
		}
	})
}

// TestPropertyNotationNeverMatters: member order, whitespace, escapes and
// number notation never change the canonical form.
func TestPropertyNotationNeverMatters(t *testing.T) {
	suitetest.Check(t, func(t *rapid.T) {
		v := jsonValue(3).Draw(t, "v")
		seed := rapid.Uint64().Draw(t, "seed")
		want, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		jsontest.Scramble(&buf, v, rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)))
		got, err := Parse(buf.Bytes(), Limits{})
		if err != nil {
			t.Fatalf("Parse(%s): %v", buf.Bytes(), err)
		}
		canon, err := Marshal(got)
		if err != nil || !bytes.Equal(canon, want) {
			t.Fatalf("another notation changed the canonical form:\n in %s\ngot %s\nwant %s", buf.Bytes(), canon, want)
		}
	})
}

// TestPropertyAcceptanceIgnoresNotation: whether a number is accepted never
// depends on how it is written; unsafe integers are refused in every
// notation and everything else reads back as the same double.
func TestPropertyAcceptanceIgnoresNotation(t *testing.T) {
	suitetest.Check(t, func(t *rapid.T) {
		f := rapid.OneOf(rapid.Float64(), rapid.Map(rapid.Int64(), func(i int64) float64 { return float64(i) })).Draw(t, "f")
		seed := rapid.Uint64().Draw(t, "seed")
		canon, err := Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		jsontest.Scramble(&buf, f, rand.New(rand.NewPCG(seed, seed)))
		for _, text := range [][]byte{canon, buf.Bytes()} {
			v, err := Parse(text, Limits{})
			if acceptable(f) != (err == nil) {
				t.Fatalf("Parse(%s) = %v, %v; acceptable(%v) = %v", text, v, err, f, acceptable(f))
			}
			if err == nil && v.(float64) != f {
				t.Fatalf("Parse(%s) = %v, want %v", text, v, f)
			}
		}
	})
}

// TestUnsafeIntegersInAnyNotation pins the examples behind the property.
func TestUnsafeIntegersInAnyNotation(t *testing.T) {
	for in, ok := range map[string]bool{
		"9007199254740991": true, "9007199254740991.0": true, "-9.007199254740991e15": true,
		"1e21": true, "1.5e300": true, "123.456": true, "4503599627370495.5": true,
		"9007199254740992": false, "9007199254740993.0": false, "1e20": false, "-1E16": false,
		"9.007199254740993e15": false, "999999999999999999999": false,
	} {
		v, err := Parse([]byte(in), Limits{})
		if (err == nil) != ok {
			t.Errorf("Parse(%s) = %v, %v; want accepted %v", in, v, err, ok)
		}
		if err != nil && !strings.Contains(err.Error(), "integer beyond") {
			t.Errorf("Parse(%s): %v", in, err)
		}
	}
}
