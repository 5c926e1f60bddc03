package samtest

import (
	"fmt"
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
// test cannot evaluate.
func Allowed(t testing.TB, s *Stack, role string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, st := range Statements(t, s, role) {
		if st["Effect"] != "Allow" {
			t.Errorf("%s: statement %v is not an Allow", role, st)
			continue
		}
		for _, k := range []string{"NotAction", "NotResource", "Condition"} {
			if _, ok := st[k]; ok {
				t.Errorf("%s: a statement uses %s", role, k)
			}
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
				out[a] = append(out[a], r)
			}
		}
	}
	return out
}

// Grant is one action on one resource.
type Grant struct{ Action, Resource string }

func (g Grant) String() string { return fmt.Sprintf("%s on %s", g.Action, g.Resource) }

// Grants flattens Allowed into its (action, resource) pairs.
func Grants(allowed map[string][]string) map[Grant]bool {
	out := map[Grant]bool{}
	for a, rs := range allowed {
		for _, r := range rs {
			out[Grant{a, r}] = true
		}
	}
	return out
}
