package main

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
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

// row writes one tab-separated row.
func row(w io.Writer, cells ...string) {
	fmt.Fprintln(w, strings.Join(cells, "\t"))
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
