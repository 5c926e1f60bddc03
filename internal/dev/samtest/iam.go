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
// test cannot evaluate (all but LeadingKeysCondition on
// dynamodb:LeadingKeys, whose patterns follow the resource, after
// keysMark).
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
		keys := ""
		if c, ok := st["Condition"]; ok {
			keys = leadingKeys(t, role, c)
		}
		actions, resources := Strings(st["Action"]), Strings(st["Resource"])
		if len(actions) == 0 || len(resources) == 0 {
			t.Errorf("%s: statement %v has no action or no resource", role, st)
		}
		for _, a := range actions {
			if strings.ContainsAny(a, "*?") {
				t.Errorf("%s: wildcard action %q", role, a)
			}
			for _, r := range resources {
				if strings.ContainsAny(r, "*?") {
					t.Errorf("%s: wildcard resource %q for %s", role, r, a)
				}
				if keys != "" {
					r += keysMark + keys
				}
				out[a] = append(out[a], r)
			}
		}
	}
	return out
}

// keysMark separates a resource from the LeadingKeys patterns that
// condition it in Allowed's values; Grants splits them again.
const keysMark = " where dynamodb:LeadingKeys like "

// LeadingKeysCondition is the one condition a role's statement may carry:
// every partition key the request touches must match one of the patterns.
const LeadingKeysCondition = "ForAllValues:StringLike"

// leadingKeys reads a statement's Condition, which must be exactly
// {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": [patterns]}}, as
// its sorted patterns joined by commas.
func leadingKeys(t testing.TB, role string, c any) string {
	t.Helper()
	m, ok := c.(map[string]any)
	if !ok || len(m) != 1 {
		t.Errorf("%s: condition %v is not one %s on dynamodb:LeadingKeys", role, c, LeadingKeysCondition)
		return "?"
	}
	inner, ok := m[LeadingKeysCondition].(map[string]any)
	if !ok || len(inner) != 1 || inner["dynamodb:LeadingKeys"] == nil {
		t.Errorf("%s: condition %v is not one %s on dynamodb:LeadingKeys (a test cannot evaluate other conditions)", role, c, LeadingKeysCondition)
		return "?"
	}
	patterns := Strings(inner["dynamodb:LeadingKeys"])
	if len(patterns) == 0 {
		t.Errorf("%s: a LeadingKeys condition without patterns", role)
		return "?"
	}
	slices.Sort(patterns)
	return strings.Join(patterns, ",")
}

// Grant is one action on one resource. Keys, in a role's grant, are the
// LeadingKeys patterns that condition it ("" for none: any key), sorted and
// joined by commas; Key, in a request's, is the partition key it touches
// ("" for a Query of an index, or a request without a key).
type Grant struct{ Action, Resource, Keys, Key string }

func (g Grant) String() string {
	s := fmt.Sprintf("%s on %s", g.Action, g.Resource)
	if g.Keys != "" {
		s += keysMark + g.Keys
	}
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
			res, keys, _ := strings.Cut(r, keysMark)
			out[Grant{Action: a, Resource: res, Keys: keys}] = true
		}
	}
	return out
}

// Permits returns the grant of role that allows request r (a grant of
// DynamoGrants): the same action on the same resource, and r's key
// matching one of the grant's patterns when it has some.
func Permits(role map[Grant]bool, r Grant) (Grant, bool) {
	for g := range role {
		if g.Action != r.Action || g.Resource != r.Resource {
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
