package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
)

// emit prints v as JSON with -json, else what human writes to an aligned
// table.
func (s *session) emit(v any, human func(w io.Writer)) error {
	if s.json {
		enc := json.NewEncoder(s.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	tw := tabwriter.NewWriter(s.out, 0, 0, 2, ' ', 0)
	human(tw)
	return tw.Flush()
}

// row writes one tab-separated row. Every cell is printed on its own
// terms (cell): text a model or a helpdesk wrote, stored on a ticket or in
// its audit, can add neither a row nor a column to what an operator reads.
func row(w io.Writer, cells ...string) {
	for i, c := range cells {
		cells[i] = cell(c)
	}
	fmt.Fprintln(w, strings.Join(cells, "\t"))
}

// cell escapes, as Go would in a quoted string, every character of s
// that is not graphic or a space: line breaks of any kind (LF, CR, NEL,
// U+2028, U+2029, VT, FF), tabs, and other control characters.
func cell(s string) string {
	if strings.IndexFunc(s, unprintable) < 0 {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !unprintable(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r)
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

func unprintable(r rune) bool { return r != ' ' && !unicode.IsGraphic(r) }

// quoted shows text a model or a helpdesk wrote as a quoted string: data,
// never a line of the tool's own.
func quoted(s string) string {
	if s == "" {
		return "-"
	}
	return strconv.Quote(s)
}

// orDash shows an empty value as "-", so that columns stay aligned and an
// empty value is visibly empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func list(xs []string) string {
	if len(xs) == 0 {
		return "-"
	}
	return strings.Join(slices.Sorted(slices.Values(xs)), ",")
}
