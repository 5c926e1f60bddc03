package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/oncecall/oncecall/internal/testing/samtest"
)

const templatePath = "../../template.yaml"

// TestTemplateOutcomeRouteAndRole: GET /outcome is the only route that
// takes IAM authorization, served by this function, whose role reads
// tickets and the id key and writes nothing; the stack names the
// route's ARN to grant. With and without the edge.
func TestTemplateOutcomeRouteAndRole(t *testing.T) {
	for _, params := range []map[string]string{nil, {"Destination": "webhook", "DestinationUrl": "https://helpdesk.example.com/tickets"}} {
		s := samtest.Deploy(t, templatePath, params)
		ev := s.Properties("OutcomeFunction")["Events"].(map[string]any)["Outcome"].(map[string]any)["Properties"].(map[string]any)
		auth, _ := ev["Auth"].(map[string]any)
		if ev["Method"] != "GET" || ev["Path"] != "/outcome" || auth == nil || auth["Authorizer"] != "AWS_IAM" {
			t.Errorf("OutcomeFunction's event: %v", ev)
		}
		for _, fn := range []string{"CallbackFunction"} {
			for name, e := range s.Properties(fn)["Events"].(map[string]any) {
				if p := e.(map[string]any)["Properties"].(map[string]any); p["Auth"] != nil {
					t.Errorf("%s's %s takes %v: the doors' credential is the nonce", fn, name, p["Auth"])
				}
			}
		}
		got := samtest.Grants(samtest.Allowed(t, s, "OutcomeRole"))
		want := map[string]bool{
			"dynamodb:GetItem on getatt:Table.Arn where dynamodb:LeadingKeys like config#*,ticket#*": true,
			"logs:CreateLogStream on getatt:OutcomeLogGroup.Arn":                                     true,
			"logs:PutLogEvents on getatt:OutcomeLogGroup.Arn":                                        true,
		}
		for g := range got {
			if !want[g.String()] {
				t.Errorf("OutcomeRole allows %s", g)
			}
			delete(want, g.String())
		}
		for g := range want {
			t.Errorf("OutcomeRole lacks %s", g)
		}
		out := s.Eval["Outputs"].(map[string]any)["OutcomeRouteArn"]
		if v := fmt.Sprint(out); !strings.Contains(v, "execute-api") || !strings.Contains(v, "/*/GET/outcome") {
			t.Errorf("OutcomeRouteArn = %v", out)
		}
	}
}
