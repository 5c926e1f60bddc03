package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/oncecall/oncecall/internal/config"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/local/rie"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/eventset"
	"github.com/oncecall/oncecall/internal/testing/samtest"
)

const (
	eventsDir     = "../../events"
	testSecret    = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:oncecall-HookKeySecret-AbCdEf"
	testTable     = "oncecall-Table-TEST"
	invokeTimeout = 30 * time.Second
	// deployedKey is the hook key in the deployed configuration's secret:
	// the public demo key is refused there (nonce.CheckKey).
	deployedKey = "deployed-hook-key-7c1e4b9a2f5d8e3c6a0b9d4f"
)

// deployedEnv is the function's environment on AWS: template.yaml's
// variables, with the references CloudFormation fills in, and the ones the
// Lambda service sets. AWS endpoints point at a.
func deployedEnv(t *testing.T, a *samtest.AWS) map[string]string {
	t.Helper()
	s := deploy(t, nil)
	env := map[string]string{}
	for k, v := range s.env(t) {
		v = strings.NewReplacer("ref:Table", testTable, "ref:HookKeySecret", testSecret).Replace(v)
		if strings.Contains(v, "ref:") || strings.Contains(v, "getatt:") {
			t.Fatalf("%s=%s: a reference the test does not fill in", k, v)
		}
		env[k] = v
	}
	maps.Copy(env, s.LambdaEnv("CallbackFunction"))
	// Where the SDK sends every service's requests, and where anything
	// else bound off the machine goes.
	maps.Copy(env, a.Env())
	return env
}

// localEnv is the environment `make invoke` gives the function.
func localEnv(storeURL string) map[string]string {
	return map[string]string{
		config.EnvTable:         testTable,
		config.EnvEndpoint:      storeURL,
		config.EnvHookKey:       localdb.DemoHookKey,
		config.EnvRegion:        "us-east-1",
		config.EnvMetrics:       "true",
		"AWS_LAMBDA_LOG_FORMAT": "JSON", "AWS_LAMBDA_FUNCTION_TIMEOUT": "10",
	}
}

func invoke(t *testing.T, e *rie.Emulator, id string, ev []byte) rie.Invocation {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), invokeTimeout)
	defer cancel()
	inv, err := e.Invoke(ctx, id, ev)
	if err != nil {
		t.Fatalf("invoke %s: %v\noutput: %q", id, err, e.Output())
	}
	return inv
}

func answer(t *testing.T, inv rie.Invocation) events.APIGatewayV2HTTPResponse {
	t.Helper()
	if inv.Status != http.StatusOK {
		t.Fatalf("the emulator answered %d: %s\noutput: %q", inv.Status, inv.Body, inv.Output)
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(inv.Body, &resp); err != nil {
		t.Fatalf("not an HTTP API v2 response: %v: %s", err, inv.Body)
	}
	return resp
}

// playAll runs every event of events/ in order against e and checks each
// against events/expected.json. after, when set, runs after each event.
//
// hookKey, when set, is the function's key: the events' valid nonces are
// made again from it.
func playAll(t *testing.T, e *rie.Emulator, hookKey string, after func(i int, c eventset.Case)) {
	t.Helper()
	m, err := eventset.Load(eventsDir)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Player()
	p.HookKey = hookKey
	for i, c := range m.Cases {
		ev, err := p.Event(c)
		if err != nil {
			t.Fatal(err)
		}
		inv := invoke(t, e, fmt.Sprintf("ev-%02d", i), ev)
		resp := answer(t, inv)
		if err := p.Check(c, eventset.Result{Response: resp, Output: inv.Output}); err != nil {
			t.Error(err)
		}
		if !eventset.Metered(inv.Output) {
			t.Errorf("%s: no EMF line in the output %q", c.Event, inv.Output)
		}
		if after != nil {
			after(i, c)
		}
	}
}

// iamActions is what a DynamoDB request needs in IAM terms.
func iamActions(t *testing.T, c samtest.AWSCall) []string {
	t.Helper()
	op := strings.TrimPrefix(c.Target, samtest.DynamoPrefix)
	switch op {
	case "TransactWriteItems":
		var in struct{ TransactItems []map[string]json.RawMessage }
		if err := json.Unmarshal(c.Body, &in); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, item := range in.TransactItems {
			for kind := range item {
				out = append(out, map[string]string{
					"ConditionCheck": "dynamodb:ConditionCheckItem", "Put": "dynamodb:PutItem",
					"Update": "dynamodb:UpdateItem", "Delete": "dynamodb:DeleteItem",
				}[kind])
			}
		}
		return out
	case "TransactGetItems":
		return []string{"dynamodb:GetItem"}
	}
	return []string{"dynamodb:" + op}
}

// tableNames collects every TableName in a request body.
func tableNames(v any, out map[string]bool) {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "TableName" {
				out[s] = true
			}
			tableNames(e, out)
		}
	case []any:
		for _, e := range x {
			tableNames(e, out)
		}
	}
}

// TestEventsOnTheDeployedConfiguration runs every event through the real
// bootstrap under the emulator, configured exactly as template.yaml deploys
// it: the hook key from Secrets Manager, the table by name, AWS's endpoints.
// It also shows what the function sends over the network: at cold start
// only the one secret read, then only the DynamoDB actions the template's
// role allows, on the template's table.
func TestEventsOnTheDeployedConfiguration(t *testing.T) {
	db, _ := samtest.StartStore(t, testTable)
	a := samtest.NewAWS(t, db.URL, map[string]string{testSecret: `{"current":"` + deployedKey + `"}`})
	e := bins.StartEmulator(t, deployedEnv(t, a))

	playAll(t, e, deployedKey, func(i int, c eventset.Case) {
		if i != 0 {
			return
		}
		// The first event is GET /functions, which needs no store: what
		// was sent so far is the cold start's network work.
		if c.Event != "functions.json" {
			t.Fatalf("first event %s; the cold-start check needs functions.json first", c.Event)
		}
		calls := a.Calls()
		if len(calls) != 1 || calls[0].Target != samtest.GetSecretValue || !bytes.Contains(calls[0].Body, []byte(testSecret)) {
			t.Errorf("cold start sent %d requests %v, want exactly one %s of %s", len(calls), targets(calls), samtest.GetSecretValue, testSecret)
		}
	})

	calls := a.Calls()
	used := map[string]bool{}
	tables := map[string]bool{}
	secretReads := 0
	role := samtest.Grants(allowed(t, deploy(t, nil)))
	usedGrants := map[samtest.Grant]bool{}
	for _, c := range calls {
		switch {
		case c.Target == samtest.GetSecretValue:
			secretReads++
		case strings.HasPrefix(c.Target, samtest.DynamoPrefix):
			for _, act := range iamActions(t, c) {
				used[act] = true
			}
			// Each item the call touches is one the role allows, key
			// conditions included: nothing would be denied on AWS.
			for _, g := range samtest.DynamoGrants(t, c, map[string]string{testTable: "getatt:Table.Arn"}) {
				if r, ok := samtest.Permits(role, g); ok {
					usedGrants[r] = true
				} else {
					t.Errorf("the function sent %s, which CallbackRole does not allow: denied on AWS", g)
				}
			}
			var body any
			_ = json.Unmarshal(c.Body, &body)
			tableNames(body, tables)
		default:
			t.Errorf("the function sent %q, which is neither the secret read nor DynamoDB", c.Target)
		}
	}
	if secretReads != 1 {
		t.Errorf("%d secret reads among %d requests, want 1 (once per cold start, then cached)", secretReads, len(calls))
	}
	if !maps.Equal(tables, map[string]bool{testTable: true}) {
		t.Errorf("requests named tables %v, want only %s", tables, testTable)
	}
	// Exactly the DynamoDB actions the role allows: none missing (the
	// call would be denied on AWS), none unused (least privilege).
	var roleDynamo []string
	for act := range allowed(t, deploy(t, nil)) {
		if strings.HasPrefix(act, "dynamodb:") {
			roleDynamo = append(roleDynamo, act)
		}
	}
	slices.Sort(roleDynamo)
	if got := slices.Sorted(maps.Keys(used)); !slices.Equal(got, roleDynamo) {
		t.Errorf("the events used DynamoDB actions %v; the role allows %v", got, roleDynamo)
	}
	for g := range role {
		if strings.HasPrefix(g.Action, "dynamodb:") && !usedGrants[g] {
			t.Errorf("CallbackRole allows %s, which these events never needed", g)
		}
	}

	// Secrets stay secret: neither the hook key nor any nonce appears in
	// what the function printed.
	for _, l := range e.Output() {
		if strings.Contains(l, deployedKey) || strings.Contains(l, localdb.DemoHookKey) || strings.Contains(l, "$2a$") || strings.Contains(l, "$2b$") {
			t.Errorf("the output shows a secret: %s", l)
		}
	}
}

func targets(calls []samtest.AWSCall) []string {
	var out []string
	for _, c := range calls {
		out = append(out, c.Target)
	}
	return out
}

// TestEventsOnTheLocalConfiguration runs every event with the configuration
// `make invoke` uses: the hook key and the store endpoint from the
// environment.
func TestEventsOnTheLocalConfiguration(t *testing.T) {
	db, _ := samtest.StartStore(t, testTable)
	e := bins.StartEmulator(t, localEnv(db.URL))
	playAll(t, e, "", nil)
}

// TestColdStartFailsFast gives the deployed configuration one fault at a
// time: the function must stop during its start, before any call is served,
// with a message that names what is wrong, after no network work but the
// secret read.
func TestColdStartFailsFast(t *testing.T) {
	ev, err := eventset.Load(eventsDir)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := ev.Case("functions.json")
	event, err := ev.Player().Event(c)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		change  func(env map[string]string)
		secret  string
		message string
		// reads is how many secret reads happen before the failure.
		reads int
	}{
		{"table missing", func(e map[string]string) { delete(e, config.EnvTable) }, "", "TABLE_NAME: is required", 0},
		{"no hook key at all", func(e map[string]string) { delete(e, config.EnvHookKeySecret) }, "", "HOOK_KEY: no hook key", 0},
		{"hook key set beside the secret", func(e map[string]string) { e[config.EnvHookKey] = "typed-into-the-console" }, "", "HOOK_KEY: is set together with HOOK_KEY_SECRET_ARN", 0},
		{"bad cost limit", func(e map[string]string) { e[config.EnvNonceMaxCost] = "31" }, "", "NONCE_MAX_COST: \"31\" must be an integer from 4 to 14", 0},
		{"bad key policy", func(e map[string]string) { e[config.EnvKeyPolicy] = "create_ticket=once" }, "", "KEY_POLICY:", 0},
		{"secret missing", nil, "", "read hook key secret", 1},
		{"secret malformed", nil, `{"currnt":"oops-a-typo"}`, `hook key secret is JSON but not {"current"`, 1},
		// Hook keys fit for purpose: on Lambda only from the secret, never
		// the demo key, never short or blank.
		{"hook key from the environment", func(e map[string]string) {
			delete(e, config.EnvHookKeySecret)
			e[config.EnvHookKey] = "typed-into-the-console-0123456789abcdef"
		}, "", "HOOK_KEY: is refused on AWS Lambda: put the hook key in the Secrets Manager secret", 0},
		{"the demo key in the secret", nil, `{"current":"` + localdb.DemoHookKey + `"}`, `hook key secret, "current" key: hook key is the public demo key`, 1},
		{"a short key in the secret", nil, "oops-a-typo", `hook key secret, "current" key: hook key is shorter than 32 bytes`, 1},
		{"a blank previous key in the secret", nil, `{"current":"` + deployedKey + `","previous":"   "}`, `hook key secret, "previous" key: hook key is empty or only white space`, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Secrets Manager holds the case's secret, a good one where
			// the case is about something else, or none ("secret missing").
			secrets := map[string]string{}
			switch {
			case tc.secret != "":
				secrets[testSecret] = tc.secret
			case tc.reads == 0:
				secrets[testSecret] = `{"current":"` + deployedKey + `"}`
			}
			a := samtest.NewAWS(t, "http://127.0.0.1:1", secrets)
			env := deployedEnv(t, a)
			if tc.change != nil {
				tc.change(env)
			}
			e := bins.StartEmulator(t, env)
			inv := invoke(t, e, "cold", event)
			if inv.Status == http.StatusOK {
				t.Fatalf("the function served a call: %s", inv.Body)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := e.WaitOutput(ctx, "oncecall: ", 5*time.Second); err != nil {
				t.Fatalf("no start-up error printed: %v\noutput %q", err, e.Output())
			}
			out := strings.Join(e.Output(), "\n")
			if !strings.Contains(out, tc.message) {
				t.Errorf("output %q lacks %q", out, tc.message)
			}
			if strings.Contains(out, "oops-a-typo") || strings.Contains(out, "typed-into-the-console") {
				t.Errorf("the start-up error shows a secret: %s", out)
			}
			calls := a.Calls()
			// The emulator retries a failed start once per invocation; each
			// start reads the secret at most once.
			for _, c := range calls {
				if c.Target != samtest.GetSecretValue {
					t.Errorf("a failing start sent %q", c.Target)
				}
			}
			if tc.reads == 0 && len(calls) != 0 {
				t.Errorf("%d requests before the configuration was refused, want none", len(calls))
			}
			if tc.reads > 0 && len(calls) == 0 {
				t.Error("no secret read")
			}
		})
	}
}

// TestHookKeyRotation: during a rotation the secret holds the new key as
// current and the old one as previous, and nonces of either are accepted.
func TestHookKeyRotation(t *testing.T) {
	const newKey = "rotated-hook-key-5f1e9a7c3b2d4e6f8a0b1c2d"
	db, _ := samtest.StartStore(t, testTable)
	a := samtest.NewAWS(t, db.URL, map[string]string{testSecret: `{"current":"` + newKey + `","previous":"` + deployedKey + `"}`})
	e := bins.StartEmulator(t, deployedEnv(t, a))
	m, err := eventset.Load(eventsDir)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := m.Case("functions.json")
	old, err := m.Player().Event(c)
	if err != nil {
		t.Fatal(err)
	}
	withNonce := func(key string) []byte {
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(old, &ev); err != nil {
			t.Fatal(err)
		}
		h, err := nonce.Generate(key, nonce.MinCost)
		if err != nil {
			t.Fatal(err)
		}
		ev.Headers["x-request-nonce"] = h
		b, _ := json.Marshal(ev)
		return b
	}
	for i, tc := range []struct {
		name   string
		event  []byte
		status int
	}{
		{"old key, as AIVAX still sends", withNonce(deployedKey), http.StatusOK},
		{"new key, once AIVAX has it", withNonce(newKey), http.StatusOK},
		{"any other key", withNonce("some-other-hook-key"), http.StatusForbidden},
	} {
		resp := answer(t, invoke(t, e, fmt.Sprintf("rot-%d", i), tc.event))
		if resp.StatusCode != tc.status {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, resp.Body, tc.status)
		}
	}
}

// TestMCPTokenFromSecretsManager: with McpTokenSecretArn set, the deployed
// function reads the token at cold start beside the hook key, and every
// POST /mcp must carry it.
func TestMCPTokenFromSecretsManager(t *testing.T) {
	const (
		mcpSecret = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:oncecall-mcp-token-AbCdEf"
		token     = "deployed-mcp-token-0123456789"
	)
	db, _ := samtest.StartStore(t, testTable)
	a := samtest.NewAWS(t, db.URL, map[string]string{testSecret: `{"current":"` + deployedKey + `"}`, mcpSecret: token})
	env := deployedEnv(t, a)
	// As the template sets it with the parameter (TestTemplateLeastPrivilege
	// checks the grant that goes with it).
	if v := deploy(t, map[string]string{"McpTokenSecretArn": mcpSecret}).env(t)[config.EnvMCPTokenSecret]; v != mcpSecret {
		t.Fatalf("the template sets %s=%q", config.EnvMCPTokenSecret, v)
	}
	env[config.EnvMCPTokenSecret] = mcpSecret
	e := bins.StartEmulator(t, env)

	m, err := eventset.Load(eventsDir)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := m.Case("mcp_tools_list.json")
	raw, err := m.Player().Event(c)
	if err != nil {
		t.Fatal(err)
	}
	withAuth := func(v string) []byte {
		var ev events.APIGatewayV2HTTPRequest
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		if v != "" {
			ev.Headers["authorization"] = v
		}
		b, _ := json.Marshal(ev)
		return b
	}
	for i, tc := range []struct {
		name, auth string
		status     int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"another token", "Bearer not-" + token, http.StatusUnauthorized},
		{"the token", "Bearer " + token, http.StatusOK},
	} {
		resp := answer(t, invoke(t, e, fmt.Sprintf("mcp-token-%d", i), withAuth(tc.auth)))
		if resp.StatusCode != tc.status || (tc.status == http.StatusOK) != strings.Contains(resp.Body, `"name":"create_ticket"`) {
			t.Errorf("%s: %d %s, want %d", tc.name, resp.StatusCode, resp.Body, tc.status)
		}
	}
	reads := map[string]bool{}
	for _, call := range a.Calls() {
		if call.Target == samtest.GetSecretValue {
			for _, s := range []string{testSecret, mcpSecret} {
				if bytes.Contains(call.Body, []byte(s)) {
					reads[s] = true
				}
			}
		}
	}
	if !reads[testSecret] || !reads[mcpSecret] {
		t.Errorf("secrets read %v, want the hook key's and the MCP token's", reads)
	}
	for _, l := range e.Output() {
		if strings.Contains(l, token) {
			t.Errorf("the output shows the MCP token: %s", l)
		}
	}
}

// TestHookKeyRotationPreviousEnds: the secret gives the previous key an
// end ("previous_until"); once it has passed, nonces of that key are
// refused by the deployed function, whatever AIVAX still sends.
func TestHookKeyRotationPreviousEnds(t *testing.T) {
	const newKey = "rotated-hook-key-5f1e9a7c3b2d4e6f8a0b1c2d"
	m, err := eventset.Load(eventsDir)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := m.Case("functions.json")
	for _, tc := range []struct {
		name, until string
		old         int
	}{
		{"previous key past its end", "2020-01-01T00:00:00Z", http.StatusForbidden},
		{"previous key before its end", time.Now().Add(time.Hour).UTC().Format(time.RFC3339), http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, _ := samtest.StartStore(t, testTable)
			a := samtest.NewAWS(t, db.URL, map[string]string{testSecret: `{"current":"` + newKey + `","previous":"` + deployedKey +
				`","previous_until":"` + tc.until + `"}`})
			e := bins.StartEmulator(t, deployedEnv(t, a))
			for i, k := range []struct {
				key    string
				status int
			}{{newKey, http.StatusOK}, {deployedKey, tc.old}} {
				p := m.Player()
				p.HookKey = k.key
				ev, err := p.Event(c)
				if err != nil {
					t.Fatal(err)
				}
				resp := answer(t, invoke(t, e, fmt.Sprintf("end-%d", i), ev))
				if resp.StatusCode != k.status {
					t.Errorf("nonce of key %d: %d %s, want %d", i, resp.StatusCode, resp.Body, k.status)
				}
			}
		})
	}
}
