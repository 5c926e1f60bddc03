package callback_test

// Same meaning, same operation: pairs of calls over HTTP against
// the embedded store, for each function, that must be one operation and
// pairs that must not; and the published listing checked against the
// normalization it must agree with.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/canonjson"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/schema"
	"github.com/oncecall/oncecall/internal/testing/schematest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// samePairs are create_ticket arguments that mean the same: a first call
// and its retry.
var samePairs = []struct{ name, first, retry string }{
	// The table.
	{"the default spelled out", `{"title":"Printer"}`, `{"title":"Printer","priority":"normal"}`},
	{"a null description", `{"title":"Printer"}`, `{"title":"Printer","description":null}`},
	// Around it.
	{"the default left out", `{"title":"Printer","priority":"normal"}`, `{"title":"Printer"}`},
	{"tags in another order", `{"title":"Printer","tags":["hw","floor-2","urgent-ish"]}`, `{"title":"Printer","tags":["urgent-ish","hw","floor-2"]}`},
	{"an empty tags list", `{"title":"Printer"}`, `{"title":"Printer","tags":[]}`},
	{"null tags and priority", `{"title":"Printer"}`, `{"title":"Printer","tags":null,"priority":null}`},
	{"an empty description", `{"title":"Printer"}`, `{"title":"Printer","description":""}`},
	{"members in another order", `{"title":"Printer","priority":"high","description":"Jams.\nTwice."}`, `{"description":"Jams.\nTwice.","priority":"high","title":"Printer"}`},
	{"everything at once", `{"title":"Printer","tags":["b","a"]}`, `{"tags":["a","b"],"description":null,"priority":"normal","title":"Printer"}`},
}

// otherPairs are create_ticket arguments that differ in meaning.
var otherPairs = []struct{ name, first, retry string }{
	{"a reworded title", `{"title":"Printer"}`, `{"title":"The printer"}`},
	{"the title's case", `{"title":"Printer"}`, `{"title":"printer"}`},
	{"a space after the title", `{"title":"Printer"}`, `{"title":"Printer "}`},
	{"another priority", `{"title":"Printer"}`, `{"title":"Printer","priority":"high"}`},
	{"a tag added", `{"title":"Printer","tags":["hw"]}`, `{"title":"Printer","tags":["hw","floor-2"]}`},
	{"a tag removed", `{"title":"Printer","tags":["hw","floor-2"]}`, `{"title":"Printer","tags":["hw"]}`},
	{"a tag's case", `{"title":"Printer","tags":["hw"]}`, `{"title":"Printer","tags":["HW"]}`},
	{"a description added", `{"title":"Printer"}`, `{"title":"Printer","description":"Jams."}`},
	{"a description's line break", `{"title":"Printer","description":"Jams."}`, `{"title":"Printer","description":"Jams.\n"}`},
}

// TestSameMeaningSameOperation: each pair of same meaning is one
// operation — the retry answers deduplicated with the first call's ticket,
// and one ticket item is written — and each pair of other meaning is two.
// Under the request policy, the same pairs are deduplicated too (the
// fingerprint is taken over the normalized arguments) and the others are
// request_id_reused.
func TestSameMeaningSameOperation(t *testing.T) {
	for _, pol := range []idempotency.Policy{idempotency.PolicyArguments, idempotency.PolicyRequest} {
		t.Run(string(pol), func(t *testing.T) {
			r := newRig(t)
			r.h.Policies = idempotency.Policies{ticket.CreateName: pol}
			for i, c := range samePairs {
				rid := fmt.Sprintf("same-%d", i)
				before := r.tickets()
				a := r.call(create("user-a", rid, c.first))
				b := r.call(create("user-a", rid, c.retry))
				if a.str("status") != "created" || a.body["deduplicated"] != false {
					t.Fatalf("%s: first call %s", c.name, a.raw)
				}
				if b.str("status") != "created" || b.body["deduplicated"] != true || b.str("ticket_id") != a.str("ticket_id") {
					t.Errorf("%s: %s then %s is not one operation:\n%s\n%s", c.name, c.first, c.retry, a.raw, b.raw)
				}
				if n := r.tickets() - before; n != 1 {
					t.Errorf("%s: %d ticket items, want 1", c.name, n)
				}
			}
			for i, c := range otherPairs {
				rid := fmt.Sprintf("other-%d", i)
				before := r.tickets()
				a := r.call(create("user-a", rid, c.first))
				b := r.call(create("user-a", rid, c.retry))
				switch pol {
				case idempotency.PolicyArguments:
					if b.str("status") != "created" || b.body["deduplicated"] != false || b.str("ticket_id") == a.str("ticket_id") {
						t.Errorf("%s: %s then %s was deduplicated:\n%s\n%s", c.name, c.first, c.retry, a.raw, b.raw)
					}
					if n := r.tickets() - before; n != 2 {
						t.Errorf("%s: %d ticket items, want 2", c.name, n)
					}
				case idempotency.PolicyRequest:
					if b.code() != "request_id_reused" || !strings.Contains(b.message(), a.str("ticket_id")) {
						t.Errorf("%s: %s then %s under the request policy: %s", c.name, c.first, c.retry, b.raw)
					}
					if n := r.tickets() - before; n != 1 {
						t.Errorf("%s: %d ticket items, want 1", c.name, n)
					}
				}
			}
		})
	}
}

// TestTicketIsMadeFromTheNormalizedArguments: whichever spelling comes
// first, the ticket is the same: the default priority, tags in one order,
// nothing for null. The retry in the other spelling is answered with it.
func TestTicketIsMadeFromTheNormalizedArguments(t *testing.T) {
	r := newRig(t)
	spellings := []string{
		`{"title":"Printer","tags":["hw","floor-2"]}`,
		`{"tags":["floor-2","hw"],"priority":"normal","description":null,"title":"Printer"}`,
	}
	for i, first := range spellings {
		rid := fmt.Sprintf("spelling-%d", i)
		a := r.call(create("user-a", rid, first))
		b := r.call(create("user-a", rid, spellings[1-i]))
		if b.body["deduplicated"] != true || b.str("ticket_id") != a.str("ticket_id") {
			t.Fatalf("%s first: %s", first, b.raw)
		}
		tk, err := r.store.Ticket(context.Background(), a.str("ticket_id"))
		if err != nil || tk == nil {
			t.Fatal(tk, err)
		}
		if tk.Title != "Printer" || tk.Priority != ticket.DefaultPriority || tk.Description != "" || !slices.Equal(tk.Tags, []string{"floor-2", "hw"}) {
			t.Errorf("%s first: stored ticket %+v", first, tk)
		}
		got := r.call(callBody("user-a", "", ticket.GetName, `{"ticket_id":"`+a.str("ticket_id")+`"}`))
		if !strings.Contains(got.raw, `"priority":"normal","tags":["floor-2","hw"]`) {
			t.Errorf("%s first: get_ticket %s", first, got.raw)
		}
	}
	if n := r.tickets(); n != 2 {
		t.Errorf("%d ticket items, want 2", n)
	}
}

// TestGetTicketArgumentsAreKeptAsSent: get_ticket has no operation to
// deduplicate, but its arguments go through the same normalization: the
// id is taken as sent, not case-folded or trimmed, so another spelling of
// an id is refused rather than read as the same ticket.
func TestGetTicketArgumentsAreKeptAsSent(t *testing.T) {
	r := newRig(t)
	id := r.call(create("user-a", "r-1", signIn)).str("ticket_id")
	for _, c := range []struct{ args, status string }{
		{`{"ticket_id":"` + id + `"}`, "found"},
		{` { "ticket_id" : "` + id + `" } `, "found"},
		{`{"ticket_id":"` + strings.ToUpper(id) + `"}`, "rejected"},
		{`{"ticket_id":" ` + id + `"}`, "rejected"},
	} {
		p := r.call(callBody("user-b", "", ticket.GetName, c.args))
		if p.str("status") != c.status {
			t.Errorf("%s: %s, want %s", c.args, p.raw, c.status)
		}
	}
}

// definition returns the handler's definition of a published function.
func (r *rig) definition(name string) *schema.Function {
	r.t.Helper()
	i := slices.IndexFunc(r.h.Tools, func(t *callback.Tool) bool { return t.Name() == name })
	if i < 0 {
		r.t.Fatalf("%s is published but not defined", name)
	}
	return r.h.Tools[i].Function
}

// canon normalizes args with f and returns their canonical form.
func canon(t *testing.T, f *schema.Function, args map[string]any) string {
	t.Helper()
	n, v := f.Normalize(args)
	if len(v) > 0 {
		t.Fatalf("%v: %v", args, v)
	}
	b, err := canonjson.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestListingAndNormalizationAgree reads the JSON Schemas GET /functions
// publishes and checks the normalization against them, parameter by
// parameter: a member is filled in exactly when the listing publishes a
// default, with that default; an array's order is ignored exactly when the
// listing declares it uniqueItems. Nothing is taken from the definitions
// but the normalization itself.
func TestListingAndNormalizationAgree(t *testing.T) {
	r := newRig(t)
	fns := r.listing()
	if len(fns) != len(r.h.Tools) {
		t.Fatalf("%d functions published, %d defined", len(fns), len(r.h.Tools))
	}
	var defaults, sets, lists int
	for _, f := range fns {
		def := r.definition(f.name)
		insts, err := schematest.Objects(f.schema)
		if err != nil {
			t.Fatal(err)
		}
		minimal := insts[slices.IndexFunc(insts, func(in schematest.Instance) bool { return in.Name == "minimal object" })].Value.(map[string]any)
		base := canon(t, def, minimal)
		for _, name := range slices.Sorted(maps.Keys(f.props)) {
			p := f.props[name]
			d, hasDefault := p["default"]
			required := slices.Contains(f.req, name)
			if required {
				if hasDefault {
					t.Errorf("%s.%s is required and has a default", f.name, name)
				}
				continue
			}
			without := maps.Clone(minimal)
			delete(without, name)
			n, v := def.Normalize(without)
			if len(v) > 0 {
				t.Fatal(v)
			}
			got, filled := n[name]
			switch {
			case hasDefault && (!filled || got != d):
				t.Errorf("%s.%s: the listing's default is %v, the normalization fills in %v", f.name, name, d, got)
			case !hasDefault && filled:
				t.Errorf("%s.%s: the listing has no default, the normalization fills in %v", f.name, name, got)
			case hasDefault:
				defaults++
				spelled := maps.Clone(minimal)
				spelled[name] = d
				if canon(t, def, spelled) != base {
					t.Errorf("%s.%s: the default spelled out normalizes otherwise than left out", f.name, name)
				}
			}
			if p["type"] != "array" {
				continue
			}
			lists++
			items, err := schematest.Values(p["items"].(map[string]any), name+"[]")
			if err != nil {
				t.Fatal(err)
			}
			var a, b any
			for _, in := range items {
				if in.Valid && in.Value != "" {
					if a == nil {
						a = in.Value
					} else if in.Value != a {
						b = in.Value
						break
					}
				}
			}
			ab, ba := maps.Clone(minimal), maps.Clone(minimal)
			ab[name], ba[name] = []any{a, b}, []any{b, a}
			orderIgnored := canon(t, def, ab) == canon(t, def, ba)
			if isSet := p["uniqueItems"] == true; isSet != orderIgnored {
				t.Errorf("%s.%s: the listing says uniqueItems=%v, the normalization ignores order: %v", f.name, name, isSet, orderIgnored)
			} else if isSet {
				sets++
			}
		}
	}
	t.Logf("%d published defaults and %d sets (of %d arrays) agree with the normalization", defaults, sets, lists)
	if defaults == 0 || sets == 0 {
		t.Errorf("nothing compared: %d defaults, %d sets", defaults, sets)
	}
}
