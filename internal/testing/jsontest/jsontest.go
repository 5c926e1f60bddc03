// Package jsontest writes JSON values the way careless or hostile senders
// do, for property and fuzz tests of code that must see through it.
package jsontest

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
)

// maxSafeInteger is 2^53 - 1, the largest integer every JSON reader keeps
// exactly; integral numbers up to it may be written with a ".0".
const maxSafeInteger = 1<<53 - 1

// Scramble writes v as valid JSON that is not canonical: members in an order
// drawn from rng, random insignificant whitespace, strings with escapes
// JCS would not use, and numbers in another notation.
func Scramble(dst *bytes.Buffer, v any, rng *rand.Rand) {
	space := func() {
		for range rng.IntN(3) {
			dst.WriteByte(" \t\r\n"[rng.IntN(4)])
		}
	}
	space()
	switch x := v.(type) {
	case nil:
		dst.WriteString("null")
	case bool:
		dst.WriteString(strconv.FormatBool(x))
	case float64:
		switch {
		case x == math.Trunc(x) && math.Abs(x) <= maxSafeInteger && rng.IntN(2) == 0:
			dst.WriteString(strconv.FormatFloat(x, 'f', -1, 64) + ".0")
		case rng.IntN(2) == 0:
			dst.WriteString(strconv.FormatFloat(x, 'E', -1, 64))
		default:
			dst.WriteString(strconv.FormatFloat(x, 'e', 20, 64)) // extra digits, same double
		}
	case string:
		dst.WriteByte('"')
		for _, r := range x {
			switch {
			case r == '"' || r == '\\':
				dst.WriteByte('\\')
				dst.WriteRune(r)
			case r < 0x20 || rng.IntN(4) == 0:
				if r >= 0x10000 {
					r1, r2 := utf16Pair(r)
					fmt.Fprintf(dst, `\u%04X\u%04x`, r1, r2)
				} else {
					fmt.Fprintf(dst, `\u%04x`, r)
				}
			case r == '/' && rng.IntN(2) == 0:
				dst.WriteString(`\/`)
			default:
				dst.WriteRune(r)
			}
		}
		dst.WriteByte('"')
	case []any:
		dst.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				dst.WriteByte(',')
			}
			Scramble(dst, e, rng)
		}
		space()
		dst.WriteByte(']')
	case map[string]any:
		// Sorted first: map order is random per run, and the order must
		// come from rng alone for a seed to replay it.
		keys := slices.Sorted(maps.Keys(x))
		rng.Shuffle(len(keys), func(i, j int) { keys[i], keys[j] = keys[j], keys[i] })
		dst.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				dst.WriteByte(',')
			}
			Scramble(dst, k, rng)
			dst.WriteByte(':')
			Scramble(dst, x[k], rng)
		}
		space()
		dst.WriteByte('}')
	}
	space()
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}
