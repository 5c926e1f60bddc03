package canonjson

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// Append appends the RFC 8785 canonical form of v to dst. v must be built
// from the types Parse returns (map[string]any, []any, string, float64,
// bool, nil); Append also takes int, int64 and []string for convenience.
// It returns an error for any other type and for non-finite numbers.
func Append(dst []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(dst, "null"...), nil
	case bool:
		if x {
			return append(dst, "true"...), nil
		}
		return append(dst, "false"...), nil
	case string:
		return AppendString(dst, x), nil
	case float64:
		return AppendNumber(dst, x)
	case int:
		return AppendNumber(dst, float64(x))
	case int64:
		return AppendNumber(dst, float64(x))
	case []string:
		dst = append(dst, '[')
		for i, s := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, s)
		}
		return append(dst, ']'), nil
	case []any:
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = Append(dst, e); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, CompareUTF16)
		dst = append(dst, '{')
		for i, k := range keys {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = AppendString(dst, k)
			dst = append(dst, ':')
			var err error
			if dst, err = Append(dst, x[k]); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	default:
		return dst, fmt.Errorf("canonjson: cannot encode %T", v)
	}
}

// Marshal returns the canonical form of v. See Append.
func Marshal(v any) ([]byte, error) {
	return Append(nil, v)
}

// CompareUTF16 orders two strings by their UTF-16 code units, as RFC 8785
// sorts object members. It differs from byte order only between characters
// U+E000–U+FFFF and characters beyond U+FFFF.
func CompareUTF16(a, b string) int {
	for a != "" && b != "" {
		ra, na := utf8.DecodeRuneInString(a)
		rb, nb := utf8.DecodeRuneInString(b)
		if ra != rb {
			ua, ub := utf16Unit(ra), utf16Unit(rb)
			if ua != ub {
				if ua < ub {
					return -1
				}
				return 1
			}
			// Both are high surrogates of the same block: compare the low ones.
			if ra < rb {
				return -1
			}
			return 1
		}
		a, b = a[na:], b[nb:]
	}
	switch {
	case a == "" && b == "":
		return 0
	case a == "":
		return -1
	default:
		return 1
	}
}

// utf16Unit returns the first UTF-16 code unit of r.
func utf16Unit(r rune) rune {
	if r < 0x10000 {
		return r
	}
	return 0xD800 + ((r - 0x10000) >> 10)
}

// AppendString appends s as a JSON string with RFC 8785 escaping: only '"',
// '\\' and control characters are escaped, the usual short forms where JSON
// has them and \u00xx (lower-case hex) otherwise.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		dst = append(dst, s[start:i]...)
		switch c {
		case '"':
			dst = append(dst, '\\', '"')
		case '\\':
			dst = append(dst, '\\', '\\')
		case '\b':
			dst = append(dst, '\\', 'b')
		case '\f':
			dst = append(dst, '\\', 'f')
		case '\n':
			dst = append(dst, '\\', 'n')
		case '\r':
			dst = append(dst, '\\', 'r')
		case '\t':
			dst = append(dst, '\\', 't')
		default:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		}
		start = i + 1
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendNumber appends f in the form ECMAScript's Number.prototype.toString
// gives it, which RFC 8785 adopts: the shortest digits that read back as f,
// plain notation for 1e-7 <= |f| < 1e21, exponent notation otherwise, and
// "0" for negative zero. NaN and infinities are an error.
func AppendNumber(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, fmt.Errorf("canonjson: %v has no JSON form", f)
	}
	if f == 0 {
		return append(dst, '0'), nil
	}
	if f < 0 {
		dst = append(dst, '-')
		f = -f
	}
	// Shortest round-trip digits in scientific form: d[.ddd]e±x.
	var tmp [32]byte
	sci := strconv.AppendFloat(tmp[:0], f, 'e', -1, 64)
	e := slices.Index(sci, 'e')
	mantissa, expPart := sci[:e], sci[e+1:]
	exp, _ := strconv.Atoi(string(expPart))
	var digits [24]byte
	k := 0
	for _, c := range mantissa {
		if c != '.' {
			digits[k] = c
			k++
		}
	}
	ds := digits[:k]
	n := exp + 1 // position of the decimal point relative to the digits
	switch {
	case k <= n && n <= 21:
		dst = append(dst, ds...)
		for range n - k {
			dst = append(dst, '0')
		}
	case 0 < n && n <= 21:
		dst = append(dst, ds[:n]...)
		dst = append(dst, '.')
		dst = append(dst, ds[n:]...)
	case -6 < n && n <= 0:
		dst = append(dst, '0', '.')
		for range -n {
			dst = append(dst, '0')
		}
		dst = append(dst, ds...)
	default:
		dst = append(dst, ds[0])
		if k > 1 {
			dst = append(dst, '.')
			dst = append(dst, ds[1:]...)
		}
		dst = append(dst, 'e')
		if n-1 >= 0 {
			dst = append(dst, '+')
		}
		dst = strconv.AppendInt(dst, int64(n-1), 10)
	}
	return dst, nil
}
