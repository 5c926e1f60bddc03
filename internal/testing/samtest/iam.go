package samtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// Statements returns every statement of every inline policy of role.
func Statements(t testing.TB, s *Stack, role string) []map[string]any {
	t.Helper()
	r, err := s.Typed.GetIAMRoleWithName(role)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.ManagedPolicyArns) > 0 {
		t.Errorf("%s attaches managed policies %v, whose permissions this test cannot see", role, r.ManagedPolicyArns)
	}
	if r.PermissionsBoundary != nil {
		t.Errorf("%s has a permissions boundary this test does not read", role)
	}
	var out []map[string]any
	for _, p := range r.Policies {
		doc := p.PolicyDocument.(map[string]any)
		for _, st := range doc["Statement"].([]any) {
			out = append(out, st.(map[string]any))
		}
	}
	return out
}

// Strings reads a string or a list of strings.
func Strings(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, Scalar(e))
		}
		return out
	}
	return nil
}

// Allowed maps every action role allows to the resources it allows it on,
// and fails on anything a least-privilege role must not have: Deny-less
// tricks (NotAction, NotResource), wildcard actions, wildcard resources
// (resources are this stack's own references or a given ARN; the one "*"
// allowed is the one inside a log group's Arn attribute, which names its
// log streams and is never written in the template), and conditions this
// test cannot evaluate (all but those of conditions). The conditions of a
// statement follow each resource, after keysMark, attrsMark and
// returnsMark.
func Allowed(t testing.TB, s *Stack, role string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, st := range Statements(t, s, role) {
		if st["Effect"] != "Allow" {
			t.Errorf("%s: statement %v is not an Allow", role, st)
			continue
		}
		for _, k := range []string{"NotAction", "NotResource"} {
			if _, ok := st[k]; ok {
				t.Errorf("%s: a statement uses %s", role, k)
			}
		}
		var cond Grant
		if c, ok := st["Condition"]; ok {
			cond = conditions(t, role, c)
		}
		actions, resources := Strings(st["Action"]), Strings(st["Resource"])
		if len(actions) == 0 || len(resources) == 0 {
			t.Errorf("%s: statement %v has no action or no resource", role, st)
		}
		for _, a := range actions {
			if strings.ContainsAny(a, "*?") {
				t.Errorf("%s: wildcard action %q", role, a)
			}
			if cond.Attrs != "" && a != "dynamodb:UpdateItem" && a != "dynamodb:PutItem" {
				t.Errorf("%s: an attribute condition on %s, which this test does not evaluate", role, a)
			}
			if cond.Returns != "" && a != "dynamodb:UpdateItem" {
				t.Errorf("%s: a return-values condition on %s, which this test does not evaluate", role, a)
			}
			for _, r := range resources {
				if strings.ContainsAny(r, "*?") {
					t.Errorf("%s: wildcard resource %q for %s", role, r, a)
				}
				out[a] = append(out[a], r+cond.conditions())
			}
		}
	}
	return out
}

// The marks that separate a resource from the conditions of its grant in
// Allowed's values; Grants splits them again.
const (
	keysMark    = " where dynamodb:LeadingKeys like "
	attrsMark   = " and dynamodb:Attributes in "
	returnsMark = " and dynamodb:ReturnValues in "
)

// The conditions a role's statement may carry, each at most once:
// LeadingKeysCondition on dynamodb:LeadingKeys (every partition key the
// request touches must match one of the patterns), AttributesCondition on
// dynamodb:Attributes (every attribute the request names must be one of
// the list) and ReturnValuesCondition on dynamodb:ReturnValues (the
// request's ReturnValues, which it must give, is one of the list).
const (
	LeadingKeysCondition  = "ForAllValues:StringLike"
	AttributesCondition   = "ForAllValues:StringEquals"
	ReturnValuesCondition = "StringEquals"
)

// conditions reads a statement's Condition into a Grant's Keys, Attrs and
// Returns (each sorted and joined by commas), failing on any operator or
// key but the three of LeadingKeysCondition.
func conditions(t testing.TB, role string, c any) Grant {
	t.Helper()
	var g Grant
	m, ok := c.(map[string]any)
	if !ok || len(m) == 0 {
		t.Errorf("%s: condition %v is not a map of operators", role, c)
		return Grant{Keys: "?"}
	}
	for op, v := range m {
		inner, ok := v.(map[string]any)
		if !ok || len(inner) != 1 {
			t.Errorf("%s: condition %s %v is not one key (a test cannot evaluate it)", role, op, v)
			return Grant{Keys: "?"}
		}
		var key string
		var dst *string
		switch op {
		case LeadingKeysCondition:
			key, dst = "dynamodb:LeadingKeys", &g.Keys
		case AttributesCondition:
			key, dst = "dynamodb:Attributes", &g.Attrs
		case ReturnValuesCondition:
			key, dst = "dynamodb:ReturnValues", &g.Returns
		default:
			t.Errorf("%s: condition operator %s (a test cannot evaluate it)", role, op)
			return Grant{Keys: "?"}
		}
		values := Strings(inner[key])
		if len(values) == 0 {
			t.Errorf("%s: condition %s %v is not %s with values", role, op, inner, key)
			return Grant{Keys: "?"}
		}
		slices.Sort(values)
		*dst = strings.Join(values, ",")
	}
	return g
}

// conditions writes g's conditions as Allowed appends them to a resource.
func (g Grant) conditions() string {
	var s string
	if g.Keys != "" {
		s += keysMark + g.Keys
	}
	if g.Attrs != "" {
		s += attrsMark + g.Attrs
	}
	if g.Returns != "" {
		s += returnsMark + g.Returns
	}
	return s
}

// Grant is one action on one resource. In a role's grant, Keys are the
// LeadingKeys patterns that condition it, Attrs the attributes it may
// name and Returns the ReturnValues it may ask for ("" for none: any),
// each sorted and joined by commas. In a request's, Key is the partition
// key it touches ("" for a Query of an index, or a request without a
// key), Attrs the top-level attributes it names and Returns its
// ReturnValues ("" when it gives none).
type Grant struct{ Action, Resource, Keys, Key, Attrs, Returns string }

func (g Grant) String() string {
	s := fmt.Sprintf("%s on %s", g.Action, g.Resource)
	s += g.conditions()
	if g.Key != "" {
		s += " of key " + g.Key
	}
	return s
}

// Grants flattens Allowed into its grants.
func Grants(allowed map[string][]string) map[Grant]bool {
	out := map[Grant]bool{}
	for a, rs := range allowed {
		for _, r := range rs {
			g := Grant{Action: a}
			r, g.Returns, _ = strings.Cut(r, returnsMark)
			r, g.Attrs, _ = strings.Cut(r, attrsMark)
			g.Resource, g.Keys, _ = strings.Cut(r, keysMark)
			out[g] = true
		}
	}
	return out
}

// Permits returns the grant of role that allows request r (a grant of
// DynamoGrants): the same action on the same resource, r's key matching
// one of the grant's patterns when it has some, every attribute r names
// among the grant's when it lists some, and r's ReturnValues among the
// grant's when it lists some.
func Permits(role map[Grant]bool, r Grant) (Grant, bool) {
	for g := range role {
		if g.Action != r.Action || g.Resource != r.Resource {
			continue
		}
		if g.Attrs != "" && !subset(r.Attrs, g.Attrs) {
			continue
		}
		if g.Returns != "" && (r.Returns == "" || !subset(r.Returns, g.Returns)) {
			continue
		}
		if g.Keys == "" {
			return g, true
		}
		for _, p := range strings.Split(g.Keys, ",") {
			if r.Key != "" && stringLike(p, r.Key) {
				return g, true
			}
		}
	}
	return Grant{}, false
}

// subset reports whether every element of the comma-joined list a is one
// of the comma-joined list of.
func subset(a, of string) bool {
	if a == "" {
		return true
	}
	set := strings.Split(of, ",")
	for _, e := range strings.Split(a, ",") {
		if !slices.Contains(set, e) {
			return false
		}
	}
	return true
}

// stringLike is IAM's StringLike: "*" matches any run of characters, "?"
// any one.
func stringLike(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if stringLike(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && stringLike(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && stringLike(pattern[1:], s[1:])
}
