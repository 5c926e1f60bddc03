package canonjson

import (
	"bufio"
	"errors"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
)

func canon(t *testing.T, in string) string {
	t.Helper()
	v, err := Parse([]byte(in), Limits{})
	if err != nil {
		t.Fatalf("Parse(%q): %v", in, err)
	}
	out, err := Marshal(v)
	if err != nil {
		t.Fatalf("Marshal: %v", err)
	}
	return string(out)
}

// TestRFC8785Examples checks the worked examples of RFC 8785 sections 3.2.2
// (value serialization) and 3.2.3 (member sorting by UTF-16 code units).
func TestRFC8785Examples(t *testing.T) {
	for _, name := range []string{"rfc8785-3.2.2", "rfc8785-3.2.3"} {
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile("testdata/" + name + ".input.json")
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile("testdata/" + name + ".output.json")
			if err != nil {
				t.Fatal(err)
			}
			if got := canon(t, string(in)); got != string(want) {
				t.Errorf("canonical form\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestRFC8785NumberSamples checks the number table of RFC 8785 appendix B.
func TestRFC8785NumberSamples(t *testing.T) {
	cases := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, c := range cases {
		got, err := AppendNumber(nil, math.Float64frombits(c.bits))
		if err != nil || string(got) != c.want {
			t.Errorf("%016x: got %q (%v), want %q", c.bits, got, err, c.want)
		}
	}
	for _, bits := range []uint64{0x7fffffffffffffff, 0x7ff0000000000000, 0xfff0000000000000} {
		if _, err := AppendNumber(nil, math.Float64frombits(bits)); err == nil {
			t.Errorf("%016x: want an error for a non-finite number", bits)
		}
	}
}

// TestNumbersAgainstECMAScript compares AppendNumber with JSON.stringify on
// 4,500 doubles recorded from Node.js (testdata/es6numbers.txt).
func TestNumbersAgainstECMAScript(t *testing.T) {
	f, err := os.Open("testdata/es6numbers.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") || line == "" {
			continue
		}
		hexBits, want, ok := strings.Cut(line, " ")
		if !ok {
			t.Fatalf("bad line %q", line)
		}
		bits, err := strconv.ParseUint(hexBits, 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		got, err := AppendNumber(nil, math.Float64frombits(bits))
		if err != nil || string(got) != want {
			t.Errorf("%s: got %q (%v), want %q", hexBits, got, err, want)
		}
		n++
	}
	if n < 4000 {
		t.Fatalf("only %d samples read", n)
	}
}

func TestMemberOrderNeverChangesOutput(t *testing.T) {
	a := canon(t, `{"b":1,"a":{"y":[1,2],"x":"s"},"c":null}`)
	b := canon(t, `{"c":null, "a":{"x":"s","y":[1,2]}, "b":1.0}`)
	if a != b {
		t.Fatalf("member order changed the canonical form: %s vs %s", a, b)
	}
	if want := `{"a":{"x":"s","y":[1,2]},"b":1,"c":null}`; a != want {
		t.Fatalf("got %s want %s", a, want)
	}
	if c := canon(t, `{"a":{"x":"s","y":[2,1]},"b":1,"c":null}`); c == a {
		t.Fatal("array order must change the canonical form")
	}
}

func TestCanonicalFormIsAFixedPoint(t *testing.T) {
	for _, in := range []string{
		`{"z":[1e30,-0,0.1,"\u00e9\ud83d\ude00"],"a":{"\u0000":true}}`,
		`"\u2028\/"`, `[]`, `{}`, `[[[]]]`, `-1.5e-7`,
	} {
		once := canon(t, in)
		if twice := canon(t, once); twice != once {
			t.Errorf("not idempotent: %s -> %s", once, twice)
		}
	}
}

func TestCompareUTF16(t *testing.T) {
	// U+FB33 sorts after U+1F600 in UTF-16 although it is smaller as a code point.
	if CompareUTF16("\uFB33", "\U0001F600") <= 0 {
		t.Error("U+FB33 must sort after U+1F600")
	}
	if CompareUTF16("a", "ab") >= 0 || CompareUTF16("ab", "a") <= 0 || CompareUTF16("x", "x") != 0 {
		t.Error("prefix order wrong")
	}
	if CompareUTF16("\U0001F600", "\U0001F601") >= 0 {
		t.Error("two astral characters compare by their low surrogate")
	}
}

func TestParseRefuses(t *testing.T) {
	cases := []struct {
		name, in, reason string
	}{
		{"empty", ``, "empty input"},
		{"trailing", `{} {}`, "unexpected data after"},
		{"duplicate", `{"a":1,"a":2}`, `duplicate member name "a"`},
		{"deep duplicate", `{"a":[{"b":{"c":1,"c":1}}]}`, `duplicate member name "c"`},
		{"escaped duplicate", `{"a":1,"\u0061":2}`, `duplicate member name "a"`},
		{"invalid utf8", "\"\xff\"", "invalid UTF-8"},
		{"overlong utf8", "\"\xc0\xaf\"", "invalid UTF-8"},
		{"invalid after valid utf8", "\"caf\xc3\xa9 \xff\"", "invalid UTF-8"},
		{"unterminated after utf8", "\"caf\xc3\xa9", "unterminated string"},
		{"lone high", `"\ud800"`, "lone high surrogate"},
		{"lone low", `"\udc00"`, "lone low surrogate"},
		{"high then char", `"\ud800\u0041"`, "lone high surrogate"},
		{"raw control", "\"a\nb\"", "control character"},
		{"bad escape", `"\x"`, "invalid escape"},
		{"short u", `"\u12"`, `invalid \u escape`},
		{"inf", `1e400`, "out of range"},
		{"big int", `9007199254740993`, "beyond ±(2^53-1)"},
		{"leading zero", `01`, "unexpected data after"},
		{"bare dot", `1.`, "digit after '.'"},
		{"nan", `NaN`, "unexpected character"},
		{"single quotes", `{'a':1}`, "member name in double quotes"},
		{"trailing comma", `[1,]`, "unexpected character"},
		{"unterminated", `"abc`, "unterminated string"},
		{"unclosed", `{"a":1`, "unexpected end of input"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.in), Limits{})
			if err == nil {
				t.Fatalf("Parse(%q) accepted", c.in)
			}
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("error %v does not wrap ErrSyntax", err)
			}
			if !strings.Contains(err.Error(), c.reason) {
				t.Errorf("error %q does not say %q", err, c.reason)
			}
		})
	}
}

func TestParseLimits(t *testing.T) {
	deep := strings.Repeat("[", 64) + strings.Repeat("]", 64)
	if _, err := Parse([]byte(deep), Limits{MaxDepth: 64}); err != nil {
		t.Fatalf("64 levels refused: %v", err)
	}
	deeper := strings.Repeat("[", 65) + strings.Repeat("]", 65)
	if _, err := Parse([]byte(deeper), Limits{MaxDepth: 64}); err == nil || !strings.Contains(err.Error(), "nesting deeper than 64") {
		t.Fatalf("65 levels: %v", err)
	}
	if _, err := Parse([]byte(`"abcdef"`), Limits{MaxStringBytes: 5}); err == nil {
		t.Fatal("long string accepted")
	}
	if _, err := Parse([]byte(`"ab\u00e9"`), Limits{MaxStringBytes: 4}); err != nil {
		t.Fatalf("4-byte string refused: %v", err)
	}
	if _, err := Parse([]byte(`"ab\u00e9\n"`), Limits{MaxStringBytes: 4}); err == nil {
		t.Fatal("escaped string over the limit accepted")
	}
	if _, err := Parse([]byte(`1.000000000000000000001`), Limits{MaxNumberLength: 10}); err == nil {
		t.Fatal("long number accepted")
	}
}

func TestErrorPath(t *testing.T) {
	_, err := Parse([]byte(`{"function":{"content":{"tags":["a",1e999]}}}`), Limits{})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want *Error, got %v", err)
	}
	if e.Path != "function.content.tags[1]" {
		t.Fatalf("path = %q", e.Path)
	}
}

func TestParseValues(t *testing.T) {
	v, err := Parse([]byte(` {"s":"a\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00","n":-0.5e2,"t":true,"f":false,"z":null,"a":[]} `), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	m := v.(map[string]any)
	if m["s"] != "a\"\\/\b\f\n\r\t\u00e9\U0001F600" || m["n"] != -50.0 || m["t"] != true || m["f"] != false || m["z"] != nil {
		t.Fatalf("decoded %#v", m)
	}
	if a, ok := m["a"].([]any); !ok || len(a) != 0 {
		t.Fatalf("empty array decoded as %#v", m["a"])
	}
}

// TestParseStrings covers the string paths: plain, non-ASCII and escaped
// text decode to the same characters, within the length limit.
func TestParseStrings(t *testing.T) {
	for in, want := range map[string]string{
		`"plain"`:                         "plain",
		"\"café ☕ 𝄞\"":                    "café ☕ 𝄞",
		`"caf\u00e9 \u2615 \ud834\udd1e"`: "café ☕ 𝄞",
		"\"é\\n\"":                        "é\n",
		`""`:                              "",
	} {
		v, err := Parse([]byte(in), Limits{MaxStringBytes: 16})
		if err != nil || v != want {
			t.Errorf("Parse(%s) = %q, %v; want %q", in, v, err, want)
		}
	}
	for _, in := range []string{`"` + strings.Repeat("a", 17) + `"`, `"` + strings.Repeat("é", 9) + `"`, `"` + strings.Repeat("\\n", 17) + `"`} {
		if _, err := Parse([]byte(in), Limits{MaxStringBytes: 16}); err == nil || !strings.Contains(err.Error(), "longer than 16 bytes") {
			t.Errorf("Parse(%s) = %v, want the length limit", in, err)
		}
	}
}

// TestTooLongIsMatchable: a string or member name past the limit is
// ErrTooLong (and still ErrSyntax); no other refusal is.
func TestTooLongIsMatchable(t *testing.T) {
	long := strings.Repeat("a", 17)
	for in, want := range map[string]bool{
		`{"k":"` + long + `"}`:                  true,
		`{"` + long + `":1}`:                    true,
		`["` + strings.Repeat("\\n", 17) + `"]`: true,
		`{"k":1,"k":2}`:                         false,
		`[1e999]`:                               false,
		`"\ud800"`:                              false,
	} {
		_, err := Parse([]byte(in), Limits{MaxStringBytes: 16})
		if err == nil || !errors.Is(err, ErrSyntax) || errors.Is(err, ErrTooLong) != want {
			t.Errorf("Parse(%s) = %v; want ErrSyntax, ErrTooLong %v", in, err, want)
		}
	}
}

func TestClip(t *testing.T) {
	long := strings.Repeat("é", 100)
	c := Clip(long)
	if len(c) > 70 || !strings.HasSuffix(c, "…") || !strings.HasPrefix(long, strings.TrimSuffix(c, "…")) {
		t.Fatalf("Clip = %q", c)
	}
	if Clip("short") != "short" {
		t.Fatal("short string changed")
	}
}

func TestKind(t *testing.T) {
	for v, want := range map[any]string{nil: "null", "s": "a string", 1.5: "a number", true: "a boolean"} {
		if got := Kind(v); got != want {
			t.Errorf("Kind(%v) = %q, want %q", v, got, want)
		}
	}
	if Kind([]any{}) != "an array" || Kind(map[string]any{}) != "an object" {
		t.Error("Kind of an array or an object")
	}
}
