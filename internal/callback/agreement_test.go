package callback_test

// The listing and the validator cannot disagree: instances
// generated from each function's JSON Schema as GET /functions publishes
// it, at every boundary of its keywords, are judged by a JSON Schema
// validator (santhosh-tekuri/jsonschema, under draft 2020-12 and draft-07,
// with Go's regexp and with an ECMAScript regexp engine, the dialect JSON
// Schema names) and by oncecall over HTTP; the verdicts must be the same.
//
// Where they may differ, the difference is listed here and in README.md
// ("The listing and the validator"), and asserted, never skipped:
//
//   - null for an optional parameter: oncecall reads it as absent (issue
//     8's normalization) and accepts the call; the schema's type refuses
//     it. oncecall is the more lenient side: AIVAX validates against the
//     schema first, so a model's null never reaches oncecall through it.
//   - the rules of the JSON text, which no schema states: oncecall refuses
//     duplicate member names and lone surrogates in the body, where a JSON
//     Schema validator sees only what its JSON parser made of the text
//     (TestTextRulesAreOncecallsAlone). Like every body limit (README,
//     "Limits"), they are not generated: the schema cannot speak of them.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"testing"

	"github.com/dlclark/regexp2/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"pgregory.net/rapid"

	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/testing/schematest"
	"github.com/oncecall/oncecall/internal/testing/suitetest"
)

// published is one function as GET /functions lists it.
type published struct {
	name   string
	raw    json.RawMessage // contentFormat as served
	schema map[string]any  // contentFormat decoded
	props  map[string]map[string]any
	req    []string
}

// listing fetches GET /functions over HTTP and returns each function's
// published argument schema.
func (r *rig) listing() []published {
	r.t.Helper()
	req, err := http.NewRequest(http.MethodGet, r.srv.URL+"/functions", nil)
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("X-Request-Nonce", validNonce(r.t))
	p := r.do(req)
	var l struct {
		Functions []struct {
			Name          string          `json:"name"`
			ContentFormat json.RawMessage `json:"contentFormat"`
		} `json:"functions"`
	}
	if p.status != http.StatusOK || json.Unmarshal([]byte(p.raw), &l) != nil || len(l.Functions) == 0 {
		r.t.Fatalf("listing: %d %s", p.status, p.raw)
	}
	var out []published
	for _, f := range l.Functions {
		pf := published{name: f.Name, raw: f.ContentFormat}
		if err := json.Unmarshal(f.ContentFormat, &pf.schema); err != nil {
			r.t.Fatal(err)
		}
		props, _ := pf.schema["properties"].(map[string]any)
		pf.props = map[string]map[string]any{}
		for n, s := range props {
			pf.props[n] = s.(map[string]any)
		}
		for _, x := range pf.schema["required"].([]any) {
			pf.req = append(pf.req, x.(string))
		}
		out = append(out, pf)
	}
	return out
}

// ecmaRegexp is a pattern compiled by regexp2 in ECMAScript mode.
type ecmaRegexp struct{ re *regexp2.Regexp }

func (e ecmaRegexp) MatchString(s string) bool {
	ok, err := e.re.MatchString(s)
	return err == nil && ok
}

func (e ecmaRegexp) String() string { return e.re.String() }

func ecmaEngine(s string) (jsonschema.Regexp, error) {
	re, err := regexp2.Compile(s, regexp2.ECMAScript|regexp2.Unicode)
	if err != nil {
		return nil, err
	}
	return ecmaRegexp{re}, nil
}

// validator is one configuration of the JSON Schema validator.
type validator struct {
	name   string
	schema *jsonschema.Schema
}

// validators compiles a published schema in every configuration.
func validators(t *testing.T, f published) []validator {
	t.Helper()
	var out []validator
	for _, d := range []struct {
		name  string
		draft *jsonschema.Draft
	}{{"2020-12", jsonschema.Draft2020}, {"draft-07", jsonschema.Draft7}} {
		for _, ecma := range []bool{false, true} {
			doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(f.raw))
			if err != nil {
				t.Fatal(err)
			}
			c := jsonschema.NewCompiler()
			c.DefaultDraft(d.draft)
			name := d.name + ", Go regexp"
			if ecma {
				c.UseRegexpEngine(ecmaEngine)
				name = d.name + ", ECMAScript regexp"
			}
			url := "mem:///" + f.name + ".json"
			if err := c.AddResource(url, doc); err != nil {
				t.Fatal(err)
			}
			s, err := c.Compile(url)
			if err != nil {
				t.Fatalf("%s: the published schema does not compile (%s): %v", f.name, name, err)
			}
			out = append(out, validator{name, s})
		}
	}
	return out
}

func (v validator) accepts(t *testing.T, instance []byte) bool {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(instance))
	if err != nil {
		t.Fatal(err)
	}
	return v.schema.Validate(inst) == nil
}

// judge calls function with content over HTTP and says whether oncecall
// accepted the arguments; any answer but an acceptance or invalid_arguments
// fails the test.
func (r *rig) judge(function string, content []byte, requestID string) (bool, reply) {
	r.t.Helper()
	p := r.call(callBody("user-a", requestID, function, string(content)))
	switch {
	case p.status == http.StatusOK && slices.Contains([]string{protocol.StatusCreated, protocol.StatusFound, protocol.StatusNotFound}, p.str("status")):
		return true, p
	case p.status == http.StatusOK && p.code() == protocol.CodeInvalidArguments:
		return false, p
	}
	r.t.Fatalf("%s %s: neither accepted nor invalid_arguments: %d %s", function, content, p.status, p.raw)
	return false, p
}

// oncecallAccepts is what oncecall must answer where the schema says
// valid: the schema's verdict, but with each null optional member read as
// absent (the one listed difference of the arguments).
func oncecallAccepts(f published, v any) bool {
	if m, ok := v.(map[string]any); ok {
		m = maps.Clone(m)
		for k, x := range m {
			if x == nil && !slices.Contains(f.req, k) {
				if _, declared := f.props[k]; declared {
					delete(m, k)
				}
			}
		}
		v = m
	}
	ok, _ := schematest.Valid(f.schema, v)
	return ok
}

// agreement checks one instance: every validator configuration says what
// the schema's keywords say, and oncecall says the same but for the
// listed difference. It returns whether the difference applied.
func agreement(t *testing.T, r *rig, f published, vs []validator, name string, value any, requestID string) (valid, differs bool) {
	t.Helper()
	b, err := json.Marshal(value)
	if err != nil {
		t.Fatal(err)
	}
	want, err := schematest.Valid(f.schema, value)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs {
		if got := v.accepts(t, b); got != want {
			t.Errorf("%s, %s: the JSON Schema validator (%s) says valid=%v, the keywords %v: %s", f.name, name, v.name, got, want, clip(b))
		}
	}
	wantOncecall := oncecallAccepts(f, value)
	got, p := r.judge(f.name, b, requestID)
	if got != wantOncecall {
		t.Errorf("%s, %s: oncecall accepted=%v, the schema says valid=%v: %s\nanswer: %s", f.name, name, got, want, clip(b), p.raw)
	}
	return want, wantOncecall != want
}

func clip(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "…"
	}
	return string(b)
}

// TestListingAndValidatorAgree plays every boundary instance of every
// published function.
func TestListingAndValidatorAgree(t *testing.T) {
	r := newRig(t)
	fns := r.listing()
	for i, f := range fns {
		insts, err := schematest.Objects(f.schema)
		if err != nil {
			t.Fatalf("%s: %v", f.name, err)
		}
		vs := validators(t, f)
		var valid, invalid, differ int
		for j, in := range insts {
			ok, d := agreement(t, r, f, vs, in.Name, in.Value, fmt.Sprintf("agree-%d-%d", i, j))
			if ok {
				valid++
			} else {
				invalid++
			}
			if d {
				differ++
				if in.Kind != schematest.Null {
					t.Errorf("%s, %s: a difference that is not a null member", f.name, in.Name)
				}
			}
		}
		t.Logf("%s: %d instances (%d valid, %d invalid by the schema, %d of them null optional members that oncecall accepts), each judged by %d validator configurations and by oncecall",
			f.name, len(insts), valid, invalid, differ, len(vs))
		optional := len(f.props) - len(f.req)
		if valid == 0 || invalid == 0 || differ != optional {
			t.Errorf("%s: %d valid, %d invalid, %d differences for %d optional members", f.name, valid, invalid, differ, optional)
		}
	}
}

// TestPropertyListingAndValidatorAgree draws objects whose members are
// drawn from each member's boundary instances (and an unknown member now
// and then): the verdicts agree on every combination.
func TestPropertyListingAndValidatorAgree(t *testing.T) {
	r := newRig(t)
	fns := r.listing()
	vs := make([][]validator, len(fns))
	values := make([]map[string][]schematest.Instance, len(fns))
	for i, f := range fns {
		vs[i] = validators(t, f)
		values[i] = map[string][]schematest.Instance{}
		for n, s := range f.props {
			v, err := schematest.Values(s, n)
			if err != nil {
				t.Fatal(err)
			}
			values[i][n] = v
		}
	}
	calls := 0
	suitetest.Check(t, func(rt *rapid.T) {
		i := rapid.IntRange(0, len(fns)-1).Draw(rt, "function")
		f := fns[i]
		obj := map[string]any{}
		for _, n := range slices.Sorted(maps.Keys(f.props)) {
			k := rapid.IntRange(-1, len(values[i][n])-1).Draw(rt, n)
			if k >= 0 {
				obj[n] = values[i][n][k].Value
			}
		}
		if rapid.IntRange(0, 7).Draw(rt, "unknown") == 0 {
			obj[schematest.UnknownMember] = "x"
		}
		calls++
		agreement(t, r, f, vs[i], "drawn object", obj, "prop-"+strconv.Itoa(calls))
	})
}

// TestTextRulesAreOncecallsAlone asserts the listed differences of the
// JSON text: arguments a JSON Schema validator accepts, because its JSON
// parser has already made something valid of them, and oncecall refuses
// with a reason. If one stops differing, this fails and the README's list
// must change.
func TestTextRulesAreOncecallsAlone(t *testing.T) {
	r := newRig(t)
	fns := r.listing()
	create := fns[slices.IndexFunc(fns, func(f published) bool { return f.name == "create_ticket" })]
	vs := validators(t, create)
	for i, c := range []struct{ name, content, says string }{
		{"a member twice", `{"title":"Printer","title":"Scanner"}`, "unique"},
		{"a lone surrogate", `{"title":"Printer \ud800"}`, "surrogate"},
	} {
		for _, v := range vs {
			if !v.accepts(t, []byte(c.content)) {
				t.Errorf("%s: the JSON Schema validator (%s) refuses %s; the difference is gone", c.name, v.name, c.content)
			}
		}
		p := r.call(callBody("user-a", "text-"+strconv.Itoa(i), "create_ticket", c.content))
		if p.str("status") != protocol.StatusRejected || !bytes.Contains([]byte(p.message()), []byte(c.says)) {
			t.Errorf("%s: oncecall answered %d %s, want a refusal saying %q", c.name, p.status, p.raw, c.says)
		}
	}
	if n := r.tickets(); n != 0 {
		t.Errorf("%d tickets written", n)
	}
}
