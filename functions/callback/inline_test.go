package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/local/helpdesk"
	"github.com/oncecall/oncecall/internal/testing/eventset"
	"github.com/oncecall/oncecall/internal/testing/samtest"
)

// TestInlineDeliveryReadsItsSecretOnce: with inline first attempts, the
// deployed callback reads the destination secret once, at its cold start,
// however many tickets it delivers (and within secret.RefreshInterval no
// more); every store request of an inline attempt is one CallbackRole
// allows, its attribute and return-value conditions included.
func TestInlineDeliveryReadsItsSecretOnce(t *testing.T) {
	const (
		token      = "inline-helpdesk-token-5c2e9a"
		destSecret = existingDestSecret
		calls      = 4
	)
	hd, err := helpdesk.Start("127.0.0.1:0", helpdesk.Options{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hd.Close() })
	db, _ := samtest.StartStore(t, testTable)
	a := samtest.NewAWS(t, db.URL, map[string]string{testSecret: `{"current":"` + deployedKey + `"}`, destSecret: `{"token":"` + token + `"}`})

	overrides := map[string]string{
		"Destination": "webhook", "DestinationUrl": webhookURL, "DeliveryInlineTimeout": "2s", "DestinationSecretArn": destSecret,
	}
	s := deploy(t, overrides)
	env := map[string]string{}
	for k, v := range s.env(t) {
		env[k] = samtest.Resolve(t, v, map[string]string{"ref:Table": testTable, "ref:HookKeySecret": testSecret})
	}
	if env[config.EnvDestinationURL] != webhookURL || env[config.EnvDestinationSecret] != destSecret {
		t.Fatalf("the template sets %s=%q, %s=%q", config.EnvDestinationURL, env[config.EnvDestinationURL], config.EnvDestinationSecret, env[config.EnvDestinationSecret])
	}
	env[config.EnvDestinationURL] = hd.WebhookURL()
	maps.Copy(env, s.LambdaEnv("CallbackFunction"))
	maps.Copy(env, a.Env())
	e := bins.StartEmulator(t, env)

	m, err := eventset.Load(eventsDir)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Player()
	p.HookKey = deployedKey
	c, _ := m.Case("created.json")
	raw, err := p.Event(c)
	if err != nil {
		t.Fatal(err)
	}
	for i := range calls {
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		ev.Body = strings.Replace(ev.Body, `"request_id":"req-7f3c2a9e"`, fmt.Sprintf(`"request_id":"req-inline-%d"`, i), 1)
		b, _ := json.Marshal(ev)
		resp := answer(t, invoke(t, e, fmt.Sprintf("inline-%d", i), b))
		if resp.StatusCode != http.StatusOK || !strings.Contains(resp.Body, `"delivered"`) {
			t.Fatalf("call %d: %d %s, want a ticket delivered inline", i, resp.StatusCode, resp.Body)
		}
	}
	if n := hd.Counts().Creations; n != calls {
		t.Errorf("the helpdesk made %d tickets, want %d", n, calls)
	}

	reads := map[string]int{}
	role := samtest.Grants(allowed(t, s))
	updates := 0
	for _, c := range a.Calls() {
		switch {
		case c.Target == samtest.GetSecretValue:
			for _, id := range []string{testSecret, destSecret} {
				if bytes.Contains(c.Body, []byte(id)) {
					reads[id]++
				}
			}
		case strings.HasPrefix(c.Target, samtest.DynamoPrefix):
			for _, g := range samtest.DynamoGrants(t, c, map[string]string{testTable: "getatt:Table.Arn"}) {
				if g.Action == "dynamodb:UpdateItem" {
					updates++
				}
				if _, ok := samtest.Permits(role, g); !ok {
					t.Errorf("an inline attempt sent %s, which CallbackRole does not allow: denied on AWS", g)
				}
			}
		}
	}
	if reads[destSecret] != 1 || reads[testSecret] != 1 {
		t.Errorf("secret reads %v over %d calls, want each secret once (at the cold start)", reads, calls)
	}
	if updates < 2*calls {
		t.Errorf("%d UpdateItem requests, want a lease and a result per call", updates)
	}
}
