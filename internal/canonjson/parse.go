package canonjson

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Limits bounds what Parse accepts. A zero field means "no limit" except
// MaxDepth, where zero means DefaultMaxDepth.
type Limits struct {
	// MaxDepth is the deepest nesting of arrays and objects accepted; the
	// top-level value is at depth 1.
	MaxDepth int
	// MaxStringBytes bounds each decoded string (member names included), in
	// bytes of UTF-8.
	MaxStringBytes int
	// MaxNumberLength bounds the length of a number literal, in bytes.
	MaxNumberLength int
	// MaxValues bounds how many values (objects, arrays, strings, numbers
	// and literals, at any depth) a document holds, so that what parsing
	// it costs grows with its count, not only its size.
	MaxValues int
	// Raw, when set, names one value by the member names that lead to it
	// from the top-level object (such as "params", "arguments"). That
	// value is not parsed: it is checked as JSON syntax only, its tokens
	// (names and values) counted against a MaxValues of its own, and
	// returned as Raw, its bytes as sent, for a reader that parses it on
	// its own terms; everything around it is held to every rule above.
	Raw []string
}

// Raw is a value Parse kept as sent, at Limits.Raw: valid JSON syntax,
// held to no other rule. Append does not encode it.
type Raw []byte

// DefaultMaxDepth is the nesting limit used when Limits.MaxDepth is zero.
const DefaultMaxDepth = 64

// MaxSafeInteger is the largest integer a binary64 double holds exactly
// together with all integers below it (2^53 - 1). Parse refuses integer
// literals beyond it: their canonical form would silently differ from the
// text the caller sent, and two different identifiers could share one key.
const MaxSafeInteger = 1<<53 - 1

// ErrSyntax is wrapped by every error Parse returns, so callers can tell
// invalid input from other failures with errors.Is.
var ErrSyntax = errors.New("invalid JSON")

// ErrTooLong is matched, with errors.Is, by the error for a string or
// member name longer than Limits.MaxStringBytes: the document may be
// valid, but it is too large to accept.
var ErrTooLong = errors.New("string longer than the limit")

// Error describes why a document was refused and where.
type Error struct {
	// Path locates the offending value, in the form `a.b[2].c` ("" for the
	// top-level value).
	Path string
	// Offset is the byte offset in the input where the problem was found.
	Offset int
	// Reason says what is wrong, in words a caller can act on.
	Reason string
	// tooLong marks a string past Limits.MaxStringBytes (ErrTooLong).
	tooLong bool
}

func (e *Error) Error() string {
	if e.Path == "" {
		return fmt.Sprintf("%s at byte %d", e.Reason, e.Offset)
	}
	return fmt.Sprintf("%s at %s (byte %d)", e.Reason, e.Path, e.Offset)
}

// Unwrap lets errors.Is(err, ErrSyntax) match.
func (e *Error) Unwrap() error { return ErrSyntax }

// Is reports whether target is ErrTooLong and e refuses a string for its
// length.
func (e *Error) Is(target error) bool { return target == ErrTooLong && e.tooLong }

// Parse decodes data as one JSON value. Objects become map[string]any, arrays
// []any, strings string, numbers float64, true/false bool and null nil.
func Parse(data []byte, lim Limits) (any, error) {
	if lim.MaxDepth <= 0 {
		lim.MaxDepth = DefaultMaxDepth
	}
	// One copy of the input as a string: strings without escapes are
	// substrings of it rather than an allocation each.
	p := parser{data: data, text: string(data), lim: lim}
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos != len(p.data) {
		return nil, p.fail("unexpected data after the JSON value")
	}
	return v, nil
}

type segment struct {
	name  string
	index int // -1 for an object member
}

type parser struct {
	data []byte
	text string // data as a string
	pos  int
	lim  Limits
	path []segment
	buf  []byte // scratch for strings with escapes
	// values counts the values parsed, against Limits.MaxValues.
	values int
}

func (p *parser) fail(reason string) error {
	return &Error{Path: p.pathString(), Offset: p.pos, Reason: reason}
}

// tooLong refuses a string past Limits.MaxStringBytes.
func (p *parser) tooLong() error {
	return &Error{Path: p.pathString(), Offset: p.pos, Reason: fmt.Sprintf("string longer than %d bytes", p.lim.MaxStringBytes), tooLong: true}
}

func (p *parser) pathString() string {
	var b strings.Builder
	for i, s := range p.path {
		if s.index >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(s.name)
	}
	return b.String()
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) value() (any, error) {
	if p.lim.MaxValues > 0 {
		if p.values++; p.values > p.lim.MaxValues {
			return nil, p.fail(fmt.Sprintf("more than %d values in the document", p.lim.MaxValues))
		}
	}
	if p.atRaw() {
		return p.raw()
	}
	if p.pos >= len(p.data) {
		if len(p.data) == 0 {
			return nil, p.fail("empty input: expected a JSON value")
		}
		return nil, p.fail("unexpected end of input")
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object()
	case c == '[':
		return p.array()
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	default:
		return nil, p.fail(fmt.Sprintf("unexpected character %q", rune(c)))
	}
}

func (p *parser) literal(word string) error {
	if len(p.data)-p.pos < len(word) || string(p.data[p.pos:p.pos+len(word)]) != word {
		return p.fail("invalid literal: expected " + word)
	}
	p.pos += len(word)
	return nil
}

func (p *parser) enter() error {
	if len(p.path) >= p.lim.MaxDepth {
		return p.fail(fmt.Sprintf("nesting deeper than %d levels", p.lim.MaxDepth))
	}
	return nil
}

func (p *parser) object() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '{'
	obj := map[string]any{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return obj, nil
	}
	for {
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, p.fail("expected a member name in double quotes")
		}
		keyAt := p.pos
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		name := k.(string)
		if _, dup := obj[name]; dup {
			p.pos = keyAt
			return nil, p.fail(fmt.Sprintf("duplicate member name %q", name))
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, p.fail("expected ':' after a member name")
		}
		p.pos++
		p.skipSpace()
		p.path = append(p.path, segment{name: name, index: -1})
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
		obj[name] = v
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of input inside an object")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return obj, nil
		default:
			return nil, p.fail("expected ',' or '}' in an object")
		}
	}
}

func (p *parser) array() (any, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	p.pos++ // '['
	arr := []any{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return arr, nil
	}
	for i := 0; ; i++ {
		p.skipSpace()
		p.path = append(p.path, segment{index: i})
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		p.path = p.path[:len(p.path)-1]
		arr = append(arr, v)
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.fail("unexpected end of input inside an array")
		}
		switch p.data[p.pos] {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return arr, nil
		default:
			return nil, p.fail("expected ',' or ']' in an array")
		}
	}
}

// atRaw reports whether the value about to be parsed is at Limits.Raw.
func (p *parser) atRaw() bool {
	if len(p.lim.Raw) == 0 || len(p.path) != len(p.lim.Raw) {
		return false
	}
	for i, s := range p.path {
		if s.index >= 0 || s.name != p.lim.Raw[i] {
			return false
		}
	}
	return true
}

// raw scans the value at p.pos as JSON syntax only and returns its bytes.
func (p *parser) raw() (any, error) {
	start := p.pos
	if err := p.skip(); err != nil {
		return nil, err
	}
	if !json.Valid(p.data[start:p.pos]) {
		p.pos = start
		return nil, p.fail("invalid JSON")
	}
	return Raw(p.data[start:p.pos]), nil
}

// skip moves past one value, following only its structure: strings to
// their closing quote, arrays and objects to their closing bracket, any
// other token to the next delimiter. raw checks what it passed with
// json.Valid.
func (p *parser) skip() error {
	depth, values := 0, 0
	for {
		p.skipSpace()
		if p.pos >= len(p.data) {
			return p.fail("unexpected end of input")
		}
		c := p.data[p.pos]
		if c != '}' && c != ']' && c != ',' && c != ':' && p.lim.MaxValues > 0 {
			// Member names count too: the count bounds the work of a
			// reader that parses this value later, as MaxValues does.
			if values++; values > p.lim.MaxValues {
				return p.fail(fmt.Sprintf("more than %d values", p.lim.MaxValues))
			}
		}
		switch c {
		case '"':
			p.pos++
			for p.pos < len(p.data) && p.data[p.pos] != '"' {
				if p.data[p.pos] == '\\' {
					p.pos++
				}
				p.pos++
			}
			if p.pos >= len(p.data) {
				return p.fail("unterminated string")
			}
			p.pos++
		case '{', '[':
			depth++
			p.pos++
			continue
		case '}', ']':
			depth--
			p.pos++
		case ',', ':':
			p.pos++
			continue
		default:
			for p.pos < len(p.data) && !strings.ContainsRune(" \t\r\n,:]}[{\"", rune(p.data[p.pos])) {
				p.pos++
			}
		}
		if depth <= 0 {
			if depth < 0 {
				return p.fail("unexpected end of a value")
			}
			return nil
		}
	}
}

// str decodes a string starting at the opening quote. It refuses raw control
// characters, invalid UTF-8, unknown escapes and lone surrogates.
func (p *parser) str() (any, error) {
	start := p.pos + 1
	i := start
	// Fast path: no escapes and only ASCII or valid UTF-8.
	for i < len(p.data) {
		c := p.data[i]
		if c == '"' {
			if p.lim.MaxStringBytes > 0 && i-start > p.lim.MaxStringBytes {
				return nil, p.tooLong()
			}
			p.pos = i + 1
			return p.text[start:i], nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(p.data[i:])
			if r == utf8.RuneError && size <= 1 {
				break // the slow path reports it
			}
			i += size
			continue
		}
		i++
	}
	// Slow path.
	p.buf = append(p.buf[:0], p.data[start:i]...)
	for {
		if p.lim.MaxStringBytes > 0 && len(p.buf) > p.lim.MaxStringBytes {
			return nil, p.tooLong()
		}
		if i >= len(p.data) {
			p.pos = i
			return nil, p.fail("unterminated string")
		}
		c := p.data[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return string(p.buf), nil
		case c < 0x20:
			p.pos = i
			return nil, p.fail("control character in a string: escape it")
		case c == '\\':
			n, err := p.escape(i)
			if err != nil {
				return nil, err
			}
			i = n
		case c < utf8.RuneSelf:
			p.buf = append(p.buf, c)
			i++
		default:
			r, size := utf8.DecodeRune(p.data[i:])
			if r == utf8.RuneError && size <= 1 {
				p.pos = i
				return nil, p.fail("invalid UTF-8 in a string")
			}
			p.buf = append(p.buf, p.data[i:i+size]...)
			i += size
		}
	}
}

// escape decodes the escape sequence at data[i] (a backslash) into p.buf and
// returns the index after it.
func (p *parser) escape(i int) (int, error) {
	if i+1 >= len(p.data) {
		p.pos = i
		return 0, p.fail("unterminated escape sequence")
	}
	switch c := p.data[i+1]; c {
	case '"', '\\', '/':
		p.buf = append(p.buf, c)
	case 'b':
		p.buf = append(p.buf, '\b')
	case 'f':
		p.buf = append(p.buf, '\f')
	case 'n':
		p.buf = append(p.buf, '\n')
	case 'r':
		p.buf = append(p.buf, '\r')
	case 't':
		p.buf = append(p.buf, '\t')
	case 'u':
		r, ok := hex4(p.data, i+2)
		if !ok {
			p.pos = i
			return 0, p.fail(`invalid \u escape: expected four hex digits`)
		}
		next := i + 6
		switch {
		case utf16.IsSurrogate(r) && r < 0xDC00:
			r2, ok := rune(0), false
			if next+1 < len(p.data) && p.data[next] == '\\' && p.data[next+1] == 'u' {
				r2, ok = hex4(p.data, next+2)
			}
			if !ok || r2 < 0xDC00 || r2 > 0xDFFF {
				p.pos = i
				return 0, p.fail("lone high surrogate in a \\u escape: send the character itself or a valid surrogate pair")
			}
			r = utf16.DecodeRune(r, r2)
			next += 6
		case utf16.IsSurrogate(r):
			p.pos = i
			return 0, p.fail("lone low surrogate in a \\u escape: send the character itself or a valid surrogate pair")
		}
		p.buf = utf8.AppendRune(p.buf, r)
		return next, nil
	default:
		p.pos = i
		return 0, p.fail(fmt.Sprintf("invalid escape sequence \\%c", rune(c)))
	}
	return i + 2, nil
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}

// number scans a JSON number per RFC 8259's grammar and converts it.
func (p *parser) number() (any, error) {
	start := p.pos
	i := p.pos
	d := p.data
	if d[i] == '-' {
		i++
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case i < len(d) && d[i] >= '1' && d[i] <= '9':
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return nil, p.fail("invalid number: expected a digit")
	}
	integer := true
	if i < len(d) && d[i] == '.' {
		integer = false
		i++
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return nil, p.fail("invalid number: expected a digit after '.'")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		integer = false
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || d[i] < '0' || d[i] > '9' {
			p.pos = i
			return nil, p.fail("invalid number: expected a digit in the exponent")
		}
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
	}
	lit := d[start:i]
	if p.lim.MaxNumberLength > 0 && len(lit) > p.lim.MaxNumberLength {
		return nil, p.fail(fmt.Sprintf("number literal longer than %d characters: send it as a string", p.lim.MaxNumberLength))
	}
	f, err := strconv.ParseFloat(string(lit), 64)
	if err != nil || math.IsInf(f, 0) {
		return nil, p.fail("number out of range: send it as a string")
	}
	// An integer beyond the safe range is refused whatever its notation:
	// 1e20 or 9007199254740993.0 denote integers as surely as their digits
	// do, and their canonical form is written as digits, which this very
	// check would refuse, so accepting them would break the round trip.
	// From 1e21 on the canonical form is exponent notation and reads back.
	if a := math.Abs(f); a > MaxSafeInteger && (integer || a < 1e21 && a == math.Trunc(a)) {
		return nil, p.fail("integer beyond ±(2^53-1) cannot be kept exactly: send it as a string")
	}
	p.pos = i
	return f, nil
}
