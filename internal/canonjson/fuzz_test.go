package canonjson

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/oncecall/oncecall/internal/testing/jsontest"
)

// FuzzCanonical checks, for any input Parse accepts, that encoding/json
// accepts it too and reads the same value (a differential check of the
// parser), that the canonical form parses back to that value, and that
// canonicalizing the canonical form changes nothing.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[true,null,"x"]}`, `"\u00e9\ud83d\ude00"`, `-0.0e-0`, `[1e21,5e-324]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data, Limits{})
		if err != nil {
			return
		}
		var std any
		if err := json.Unmarshal(data, &std); err != nil {
			t.Fatalf("Parse accepted what encoding/json refuses (%v): %q", err, data)
		}
		if !reflect.DeepEqual(std, v) {
			t.Fatalf("Parse and encoding/json read %q differently:\n%#v\n%#v", data, v, std)
		}
		canon, err := Marshal(v)
		if err != nil {
			t.Fatalf("Marshal of a parsed value: %v", err)
		}
		back, err := Parse(canon, Limits{})
		if err != nil {
			t.Fatalf("the canonical form %q of %q does not parse: %v", canon, data, err)
		}
		if !reflect.DeepEqual(back, v) {
			t.Fatalf("round trip through %q changed the value", canon)
		}
		again, err := Marshal(back)
		if err != nil || !bytes.Equal(again, canon) {
			t.Fatalf("canonical form not a fixed point:\n%q\n%q", canon, again)
		}
	})
}

// FuzzKeyOrder rewrites any accepted document with its members in another
// order (drawn from seed), other whitespace, escapes and number notation,
// and checks that the canonical form does not change.
func FuzzKeyOrder(f *testing.F) {
	f.Add([]byte(`{"b":{"y":[1,2],"x":"s"},"a":null,"\u00e9":1,"\ud83d\ude00":2,"\ufb33":3}`), uint64(1))
	f.Add([]byte(`[{"z":1,"a":{"m":0.1,"b":-2}}]`), uint64(7))
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		v, err := Parse(data, Limits{})
		if err != nil {
			return
		}
		want, err := Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		jsontest.Scramble(&buf, v, rand.New(rand.NewPCG(seed, ^seed)))
		got, err := Parse(buf.Bytes(), Limits{})
		if err != nil {
			t.Fatalf("rewritten %q of %q does not parse: %v", buf.Bytes(), data, err)
		}
		canon, err := Marshal(got)
		if err != nil || !bytes.Equal(canon, want) {
			t.Fatalf("notation changed the canonical form of %q:\n%q\n%q", data, want, canon)
		}
	})
}
