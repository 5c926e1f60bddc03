package schematest

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"unicode/utf8"
)

// matchVariants is how many differently chosen matches Matches tries.
const matchVariants = 4

// Matches returns strings that pattern matches, as a JSON Schema pattern
// does (anywhere in the string; anchor it to match the whole). Where the
// pattern leaves a choice, the variants take the edges: each end of every
// character range, and the fewest and the most repetitions.
func Matches(pattern string) ([]string, error) {
	re, tree, err := parse(pattern)
	if err != nil {
		return nil, err
	}
	var out []string
	for v := range matchVariants {
		w := &walker{variant: v}
		s := w.gen(tree)
		if !re.MatchString(s) {
			return nil, fmt.Errorf("schematest: %q generated from %q does not match it", s, pattern)
		}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// Misses returns strings that just miss pattern: a match with one
// character replaced by the nearest one outside its class, one literal
// changed, one repetition short or over, a line break or another
// character before or after, and the empty string, each kept only if the
// pattern does not match it.
func Misses(pattern string) ([]string, error) {
	re, tree, err := parse(pattern)
	if err != nil {
		return nil, err
	}
	var cand []string
	var breaks []*walker
	visit(tree, func(n *syntax.Regexp) {
		switch n.Op {
		case syntax.OpCharClass:
			for _, r := range outside(n.Rune) {
				breaks = append(breaks, &walker{target: n, outside: r})
			}
		case syntax.OpLiteral:
			for i, r := range n.Rune {
				breaks = append(breaks, &walker{target: n, pos: i, outside: r + 1})
			}
		case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
			lo, hi := bounds(n)
			if lo > 0 {
				breaks = append(breaks, &walker{target: n, count: lo - 1})
			}
			if hi >= 0 {
				breaks = append(breaks, &walker{target: n, count: hi + 1})
			}
		}
	})
	for _, w := range breaks {
		cand = append(cand, w.gen(tree))
	}
	m := (&walker{}).gen(tree)
	cand = append(cand, "", m+"\n", "\n"+m, m+"x", "x"+m, m+" ")
	var out []string
	for _, s := range cand {
		if utf8.ValidString(s) && !re.MatchString(s) && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

func parse(pattern string) (*regexp.Regexp, *syntax.Regexp, error) {
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, nil, fmt.Errorf("schematest: pattern %q: %w", pattern, err)
	}
	tree, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, nil, fmt.Errorf("schematest: pattern %q: %w", pattern, err)
	}
	return re, tree, nil
}

// walker writes one string a pattern's tree describes. With a target, it
// breaks that node once: a character outside its class, or count
// repetitions.
type walker struct {
	variant int
	choices int
	target  *syntax.Regexp
	pos     int // the character of a literal target to change
	outside rune
	count   int
	done    bool
}

// next picks among n choices, differently for each variant and each place.
func (w *walker) next(n int) int {
	w.choices++
	return (w.variant + w.choices) % n
}

func (w *walker) gen(n *syntax.Regexp) string {
	var b strings.Builder
	w.write(&b, n)
	return b.String()
}

func (w *walker) write(b *strings.Builder, n *syntax.Regexp) {
	breaking := n == w.target && !w.done
	switch n.Op {
	case syntax.OpLiteral:
		for i, r := range n.Rune {
			if breaking && i == w.pos {
				r, w.done = w.outside, true
			}
			b.WriteRune(r)
		}
	case syntax.OpCharClass:
		if breaking {
			b.WriteRune(w.outside)
			w.done = true
			return
		}
		c := inside(n.Rune)
		b.WriteRune(c[w.next(len(c))])
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		b.WriteByte('a')
	case syntax.OpCapture:
		w.write(b, n.Sub[0])
	case syntax.OpConcat:
		for _, s := range n.Sub {
			w.write(b, s)
		}
	case syntax.OpAlternate:
		i := w.next(len(n.Sub))
		for j, s := range n.Sub {
			if w.target != nil && !w.done && holds(s, w.target) {
				i = j
			}
		}
		w.write(b, n.Sub[i])
	case syntax.OpStar, syntax.OpPlus, syntax.OpQuest, syntax.OpRepeat:
		lo, hi := bounds(n)
		var reps int
		switch {
		case breaking:
			reps, w.done = w.count, true
		case w.target != nil && !w.done && holds(n.Sub[0], w.target):
			reps = max(lo, 1)
		case hi < 0:
			reps = []int{lo, lo + 2}[w.next(2)]
		default:
			reps = []int{lo, hi}[w.next(2)]
		}
		for range reps {
			w.write(b, n.Sub[0])
		}
	}
	// Anchors, word boundaries and the empty match write nothing.
}

// bounds is how often a repetition node repeats; hi < 0 means no bound.
func bounds(n *syntax.Regexp) (lo, hi int) {
	switch n.Op {
	case syntax.OpStar:
		return 0, -1
	case syntax.OpPlus:
		return 1, -1
	case syntax.OpQuest:
		return 0, 1
	}
	return n.Min, n.Max
}

// inside lists the ends of a class's ranges, surrogates left out.
func inside(ranges []rune) []rune {
	var out []rune
	for i := 0; i < len(ranges); i += 2 {
		for _, r := range []rune{ranges[i], ranges[i+1]} {
			if utf8.ValidRune(r) && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// outside lists the characters just beyond each end of a class's ranges
// that the class does not hold.
func outside(ranges []rune) []rune {
	in := func(r rune) bool {
		for i := 0; i < len(ranges); i += 2 {
			if ranges[i] <= r && r <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	var out []rune
	for i := 0; i < len(ranges); i += 2 {
		for _, r := range []rune{ranges[i] - 1, ranges[i+1] + 1} {
			if utf8.ValidRune(r) && !in(r) && !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

func visit(n *syntax.Regexp, f func(*syntax.Regexp)) {
	f(n)
	for _, s := range n.Sub {
		visit(s, f)
	}
}

func holds(n, target *syntax.Regexp) bool {
	found := false
	visit(n, func(x *syntax.Regexp) { found = found || x == target })
	return found
}
