package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/testing/samtest"
)

type policyDoc struct {
	Statement []struct {
		Action    any                       `json:"Action"`
		Resource  any                       `json:"Resource"`
		Condition map[string]map[string]any `json:"Condition"`
	} `json:"Statement"`
}

// kmsActions maps each KMS action the policy allows to its resources.
func (p policyDoc) kmsActions() map[string][]string {
	out := map[string][]string{}
	for _, st := range p.Statement {
		for _, a := range samtest.Strings(st.Action) {
			if strings.HasPrefix(a, "kms:") {
				out[a] = append(out[a], samtest.Strings(st.Resource)...)
			}
		}
	}
	return out
}

// documentedPolicy is the JSON policy that follows the first mention of
// intro in docs/deploy.md.
func documentedPolicy(t *testing.T, page, intro string) policyDoc {
	t.Helper()
	i := strings.Index(page, intro)
	if i < 0 {
		t.Fatalf("docs/deploy.md does not mention %q", intro)
	}
	rest := page[i:]
	start := strings.Index(rest, "```json\n")
	end := strings.Index(rest[start+8:], "\n```")
	var p policyDoc
	if start < 0 || end < 0 {
		t.Fatalf("no JSON policy after %q", intro)
	}
	if err := json.Unmarshal([]byte(rest[start+8:start+8+end]), &p); err != nil {
		t.Fatalf("the policy after %q: %v", intro, err)
	}
	return p
}

// TestDocumentedRoles: the users role the docs give reads by key and by
// index only (no Scan of the whole table, tickets and results included)
// and writes users and grants only; the decision role's UpdateItem is
// limited to what decisions write (dynamo.DecisionAttributes), so it can
// change neither a stored result nor a ticket's content; neither may put
// an item with a decision in it. The decision role alone may make an
// audit entry's proof (kms:Encrypt on the audit key, which the key's
// policy allows only to DecisionRoleName: TestTemplateAuditKey); both may
// check one (kms:Decrypt), on that key alone.
func TestDocumentedRoles(t *testing.T) {
	b, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	users := documentedPolicy(t, page, "The users role (")
	for _, st := range users.Statement {
		acts := samtest.Strings(st.Action)
		if slices.Contains(acts, "dynamodb:Scan") {
			t.Errorf("the users role may Scan the whole table: %v", acts)
		}
		for _, a := range acts {
			if a == "dynamodb:PutItem" || a == "dynamodb:UpdateItem" || a == "dynamodb:DeleteItem" {
				keys := samtest.Strings(st.Condition["ForAllValues:StringLike"]["dynamodb:LeadingKeys"])
				for _, k := range keys {
					if k != "user#*" && k != "grant#*" {
						t.Errorf("the users role may %s items like %q", a, k)
					}
				}
				if len(keys) == 0 {
					t.Errorf("the users role may %s any item", a)
				}
			}
		}
	}
	decision := documentedPolicy(t, page, "The decision role (")
	updates := 0
	for _, st := range decision.Statement {
		for _, a := range samtest.Strings(st.Action) {
			switch a {
			case "dynamodb:PutItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem":
				t.Errorf("the decision role may %s", a)
			case "dynamodb:UpdateItem":
				updates++
				got := samtest.Strings(st.Condition["ForAllValues:StringEquals"]["dynamodb:Attributes"])
				if !slices.Equal(got, dynamo.DecisionAttributes()) {
					t.Errorf("the decision role's UpdateItem names %v; decisions write %v (dynamo.DecisionAttributes)", got, dynamo.DecisionAttributes())
				}
			}
		}
	}
	if updates != 1 {
		t.Errorf("%d UpdateItem grants in the decision role, want 1", updates)
	}
	const auditKey = "<audit key ARN>"
	for role, want := range map[string]map[string][]string{
		"users":    {"kms:Decrypt": {auditKey}},
		"decision": {"kms:Encrypt": {auditKey}, "kms:Decrypt": {auditKey}},
	} {
		p := map[string]policyDoc{"users": users, "decision": decision}[role]
		if got := p.kmsActions(); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("the %s role's KMS grants %v, want %v", role, got, want)
		}
	}
	if !strings.Contains(page, "Name it\n`oncecall-decision`, or deploy with `DecisionRoleName`") {
		t.Error("docs/deploy.md does not tie the decision role to DecisionRoleName, the name the audit key's policy allows")
	}
	params, _ := samtest.Read(t, "../../template.yaml")["Parameters"].(map[string]any)
	if p, _ := params["DecisionRoleName"].(map[string]any); p["Default"] != "oncecall-decision" {
		t.Errorf("the template's DecisionRoleName %v, want the default the docs name, oncecall-decision", p)
	}
}
