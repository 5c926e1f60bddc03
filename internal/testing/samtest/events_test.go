package samtest_test

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testing/samtest"
)

// The sample events have the shape of the events the SAM CLI generates:
// testdata/generated holds, unchanged, what `sam local generate-event`
// of the pinned CLI gives for each kind (`make sam-goldens` writes them,
// `make sam-check` fails when the CLI gives anything else).
const (
	eventsDir    = "../../../events"
	generatedDir = "testdata/generated"
)

// eventKind is one kind of sample event: the generated event it has the
// shape of, and every departure our events may make from it, each with its
// reason. A departure no sample event makes is an error: the list says
// only what is so.
type eventKind struct {
	golden string
	rules  samtest.ShapeRules
}

var kinds = map[string]eventKind{
	// An API Gateway HTTP API (payload format 2.0) request to
	// CallbackFunction's routes.
	"http-api": {"http-api.json", samtest.ShapeRules{
		"headers":               {Kind: samtest.AnyKeys, Why: "header names are the request's"},
		"body":                  {Kind: samtest.MayOmit, Why: "API Gateway sends no body for a request without one (GET /functions)"},
		"cookies":               {Kind: samtest.MayOmit, Why: "present only when the request has a Cookie header; AIVAX sends none"},
		"queryStringParameters": {Kind: samtest.MayOmit, Why: "present only with a query string; neither route takes one (rawQueryString is empty)"},
		"pathParameters":        {Kind: samtest.MayOmit, Why: "present only for a route with path variables; /callback and /functions have none"},
		"stageVariables":        {Kind: samtest.MayOmit, Why: "template.yaml's HttpApi defines no stage variables"},
		"requestContext.authentication": {Kind: samtest.MayOmit,
			Why: "present only with mutual TLS on a custom domain; the template has neither"},
		"requestContext.authorizer": {Kind: samtest.MayOmit,
			Why: "present only when a route has an authorizer; the template's routes have none (oncecall checks the nonce itself)"},
	}},
	// A batch of the table's stream as the event source mapping hands it to
	// DeliverFunction.
	"dynamodb-stream": {"dynamodb-stream.json", samtest.ShapeRules{
		"Records[].dynamodb.Keys":     {Kind: samtest.Attributes, Why: "the table's key attributes"},
		"Records[].dynamodb.NewImage": {Kind: samtest.Attributes, Why: "the item's attributes"},
		"Records[].dynamodb.OldImage": {Kind: samtest.Attributes, Why: "the item's attributes"},
	}},
	// EventBridge's scheduled event of DeliverFunction's sweep.
	"scheduled": {"scheduled.json", samtest.ShapeRules{
		"version": {Kind: samtest.MayAdd, Type: "string",
			Why: `EventBridge's envelope carries "version": "0" in every event (events.EventBridgeEvent reads it); the CLI's sample leaves it out`},
	}},
}

// notEvents are the JSON files beside the events that are not events.
var notEvents = map[string]string{
	"expected.json": "what each event must produce",
	"sam-env.json":  "sam local invoke's --env-vars",
}

// kindOf is the kind of the sample event at rel (under events/).
func kindOf(rel string) (string, bool) {
	dir, name := filepath.Split(filepath.ToSlash(rel))
	switch {
	case dir == "":
		return "http-api", true
	case dir == "deliver/" && strings.HasPrefix(name, "stream_"):
		return "dynamodb-stream", true
	case dir == "deliver/" && name == "scheduled.json":
		return "scheduled", true
	}
	return "", false
}

// sampleEvents lists every JSON file under events/ that is an event, by
// kind, and fails on one of no known kind.
func sampleEvents(t *testing.T) map[string][]string {
	t.Helper()
	byKind := map[string][]string{}
	err := filepath.WalkDir(eventsDir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(eventsDir, path)
		if _, ok := notEvents[d.Name()]; ok || !strings.HasSuffix(d.Name(), ".json") {
			return nil
		}
		kind, ok := kindOf(rel)
		if !ok {
			t.Errorf("events/%s: of no kind this test knows; give it one in kindOf (its shape must be checked) or list it in notEvents", rel)
			return nil
		}
		byKind[kind] = append(byKind[kind], rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return byKind
}

func decodeFile(t *testing.T, path string) any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v, err := samtest.DecodeShape(b)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// TestGeneratedEventsAreTheKinds: testdata/generated holds exactly the
// kinds' goldens (and its README), and every rule fits its golden: what may
// be omitted or is named by data is there, what may be added is not.
func TestGeneratedEventsAreTheKinds(t *testing.T) {
	entries, err := os.ReadDir(generatedDir)
	if err != nil {
		t.Fatal(err)
	}
	var files, want []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	for _, k := range kinds {
		want = append(want, k.golden)
	}
	want = append(want, "README.md")
	slices.Sort(want)
	if !slices.Equal(files, want) {
		t.Errorf("%s holds %v, want %v", generatedDir, files, want)
	}
	readme, err := os.ReadFile(filepath.Join(generatedDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name, k := range kinds {
		if !strings.Contains(string(readme), k.golden+": `sam local generate-event ") {
			t.Errorf("README.md does not say which command made %s", k.golden)
		}
		paths := samtest.ShapePaths(decodeFile(t, filepath.Join(generatedDir, k.golden)), k.rules)
		for p, r := range k.rules {
			if r.Why == "" {
				t.Errorf("%s: the rule on %s gives no reason", name, p)
			}
			typ, there := paths[p]
			switch r.Kind {
			case samtest.MayOmit:
				if !there {
					t.Errorf("%s: %s may be omitted, but %s has no such member", name, p, k.golden)
				}
			case samtest.AnyKeys, samtest.Attributes:
				if typ != "object" {
					t.Errorf("%s: %s holds members named by data, but %s has a %q there", name, p, k.golden, typ)
				}
			case samtest.MayAdd:
				parent := p[:max(0, strings.LastIndex(p, "."))]
				if there || (parent != "" && paths[parent] != "object") {
					t.Errorf("%s: %s may be added, but %s has it, or no object to add it to", name, p, k.golden)
				}
			default:
				t.Errorf("%s: %s: rule of no kind", name, p)
			}
		}
	}
}

// TestSampleEventsHaveTheGeneratedShapes: every sample event has its
// kind's generated shape (the same member paths with the same JSON types,
// any values) but for its kind's rules, and each MayOmit and MayAdd rule
// is needed by at least one sample event.
func TestSampleEventsHaveTheGeneratedShapes(t *testing.T) {
	byKind := sampleEvents(t)
	for _, name := range slices.Sorted(maps.Keys(kinds)) {
		k := kinds[name]
		golden := decodeFile(t, filepath.Join(generatedDir, k.golden))
		if len(byKind[name]) == 0 {
			t.Errorf("no sample event of kind %s under events/", name)
		}
		needed := map[string]bool{}
		for _, rel := range byKind[name] {
			diffs, used := samtest.CompareShape(golden, decodeFile(t, filepath.Join(eventsDir, rel)), k.rules)
			for _, d := range diffs {
				t.Errorf("events/%s, against %s (%s): %s", rel, k.golden, name, d)
			}
			maps.Copy(needed, used)
		}
		for p, r := range k.rules {
			if (r.Kind == samtest.MayOmit || r.Kind == samtest.MayAdd) && !needed[p] {
				t.Errorf("%s: no sample event needs the rule on %s (%s): remove it", name, p, r.Why)
			}
		}
	}
}

// member is one object member of an event: where it is (keys, and indexes
// as ints) and its path as the rules name it.
type member struct {
	at   []any
	path string
}

// members lists v's object members that its kind requires: not those the
// rules let it omit or add, nor those named by data.
func members(v any, rules samtest.ShapeRules) []member {
	var out []member
	var walk func(at []any, path string, v any)
	walk = func(at []any, path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			switch rules[path].Kind {
			case samtest.AnyKeys, samtest.Attributes:
				return
			}
			for _, k := range slices.Sorted(maps.Keys(x)) {
				p := k
				if path != "" {
					p = path + "." + k
				}
				here := append(slices.Clone(at), k)
				switch rules[p].Kind {
				case samtest.MayOmit:
					walk(here, p, x[k])
				case samtest.MayAdd:
				default:
					out = append(out, member{here, p})
					walk(here, p, x[k])
				}
			}
		case []any:
			for i, el := range x {
				walk(append(slices.Clone(at), i), path+"[]", el)
			}
		}
	}
	walk(nil, "", v)
	return out
}

// without removes the member at from v (which it changes).
func without(v any, at []any) {
	for _, step := range at[:len(at)-1] {
		switch s := step.(type) {
		case string:
			v = v.(map[string]any)[s]
		case int:
			v = v.([]any)[s]
		}
	}
	delete(v.(map[string]any), at[len(at)-1].(string))
}

// TestSampleEventsLosingAMemberFail: an event missing any member its kind
// requires (at any depth, in any record of a batch) fails the comparison,
// so the check above can fail for every member it passes.
func TestSampleEventsLosingAMemberFail(t *testing.T) {
	checked := 0
	for name, rels := range sampleEvents(t) {
		k := kinds[name]
		golden := decodeFile(t, filepath.Join(generatedDir, k.golden))
		for _, rel := range rels {
			path := filepath.Join(eventsDir, rel)
			for _, m := range members(decodeFile(t, path), k.rules) {
				ev := decodeFile(t, path)
				without(ev, m.at)
				checked++
				if diffs, _ := samtest.CompareShape(golden, ev, k.rules); len(diffs) == 0 {
					t.Errorf("events/%s without %s (at %v) still has the shape of %s", rel, m.path, m.at, k.golden)
				}
			}
		}
	}
	t.Logf("%d members removed, one at a time, each found missing", checked)
	if checked < 100 {
		t.Errorf("only %d members removed; the sample events are fewer or smaller than this test expects", checked)
	}
}

// TestCompareShape: what the comparison finds, and what it lets pass, on
// small events.
func TestCompareShape(t *testing.T) {
	decode := func(s string) any {
		v, err := samtest.DecodeShape([]byte(s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		return v
	}
	const golden = `{"version":"2.0","n":1,"ok":true,"h":{"A":"x","B":"y"},"opt":{"x":1},
		"list":[{"kind":"a","a":"1"},{"kind":"b","b":2}],"item":{"id":{"N":"1"}}}`
	rules := samtest.ShapeRules{
		"h":     {Kind: samtest.AnyKeys, Why: "names by data"},
		"opt":   {Kind: samtest.MayOmit, Why: "may be left out"},
		"extra": {Kind: samtest.MayAdd, Type: "string", Why: "may be added"},
		"item":  {Kind: samtest.Attributes, Why: "an item"},
	}
	for _, tc := range []struct {
		name, event string
		diffs       []string // substrings, one per difference, in order
	}{
		{"the same", golden, nil},
		{"other values, header names, attributes and one list element",
			`{"version":"x","n":2.5,"ok":false,"h":{"content-type":"a"},"opt":{"x":7},
			"list":[{"kind":"b","b":9}],"item":{"pk":{"S":"a"},"l":{"L":[{"M":{"x":{"NULL":true}}},{"SS":["a"]}]}}}`, nil},
		{"optional left out, allowed member added",
			`{"version":"2.0","n":1,"ok":true,"h":{},"list":[],"item":{},"extra":"0"}`, nil},
		{"a required member missing", `{"n":1,"ok":true,"h":{},"list":[],"item":{}}`,
			[]string{"version: missing (the generated event has a string)"}},
		{"a type changed", `{"version":"2.0","n":"1","ok":true,"h":{},"list":[],"item":{}}`,
			[]string{"n: string where the generated event has number"}},
		{"a member the generated event lacks", `{"version":"2.0","n":1,"ok":true,"h":{},"list":[],"item":{},"more":1}`,
			[]string{"more: a number the generated event does not have"}},
		{"an added member of the wrong type", `{"version":"2.0","n":1,"ok":true,"h":{},"list":[],"item":{},"extra":0}`,
			[]string{"extra: number where an added string is allowed"}},
		{"inside an optional member", `{"version":"2.0","n":1,"ok":true,"h":{},"opt":{},"list":[],"item":{}}`,
			[]string{"opt.x: missing"}},
		{"a header that is not a string", `{"version":"2.0","n":1,"ok":true,"h":{"X":1},"list":[],"item":{}}`,
			[]string{`(member "X") h.*: number where the generated event has string`}},
		{"a list element like none", `{"version":"2.0","n":1,"ok":true,"h":{},"list":[{"kind":"a"}],"item":{}}`,
			[]string{"(element 0) list[].a: missing"}},
		{"a list of the wrong type", `{"version":"2.0","n":1,"ok":true,"h":{},"list":{},"item":{}}`,
			[]string{"list: object where the generated event has array"}},
		{"bad attribute values", `{"version":"2.0","n":1,"ok":true,"h":{},"list":[],
			"item":{"a":{"S":1},"b":{"X":"1"},"c":{"S":"1","N":"1"},"d":"1","e":{"NULL":false},"f":{"L":[{"Q":1}]},"g":{"NS":[1]}}}`,
			[]string{`"a"): S holds a number`, `"b"): AttributeValue type "X"`, `"c"): an object of members N, S`, `"d"): a string`,
				`"e"): NULL is false`, `"f").L[0]: AttributeValue type "Q"`, `"g").NS[0]: a number, want a string`}},
	} {
		diffs, _ := samtest.CompareShape(decode(golden), decode(tc.event), rules)
		ok := len(diffs) == len(tc.diffs)
		for i := 0; ok && i < len(diffs); i++ {
			ok = strings.Contains(diffs[i], tc.diffs[i])
		}
		if !ok {
			t.Errorf("%s: differences\n%s\nwant ones containing\n%s", tc.name, strings.Join(diffs, "\n"), strings.Join(tc.diffs, "\n"))
		}
	}
	_, used := samtest.CompareShape(decode(golden), decode(`{"version":"2.0","n":1,"ok":true,"h":{},"list":[],"item":{},"extra":"0"}`), rules)
	if want := map[string]bool{"opt": true, "extra": true}; !maps.Equal(used, want) {
		t.Errorf("used %v, want %v", used, want)
	}
	if got := fmt.Sprint(samtest.ShapePaths(decode(golden), rules)); !strings.Contains(got, "h.*:string") || !strings.Contains(got, "item.*:object") || !strings.Contains(got, "list[].kind:string") {
		t.Errorf("ShapePaths: %s", got)
	}
}
