package apigw_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/oncecall/oncecall/internal/apigw"
	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/testing/hostiletest"
)

// testCost keeps BCrypt cheap; the verifier takes the same path at cost 9.
const testCost = nonce.MinCost

var (
	noncesOnce sync.Once
	nonces     hostiletest.Nonces
)

func testNonces(_ testing.TB) hostiletest.Nonces {
	noncesOnce.Do(func() {
		var err error
		if nonces, err = hostiletest.NewNonces(localdb.DemoHookKey, testCost); err != nil {
			panic(err)
		}
	})
	return nonces
}

// fixture is the Lambda's handler over a fresh table of a real store.
type fixture struct {
	env   *dynamotest.Env
	store *dynamo.Store
	h     *callback.Handler
	api   *httpapi.Server
	gw    *apigw.Handler
	proxy *dynamotest.Proxy
}

// newFixture builds the fixture, its server with o's options when given.
func newFixture(t *testing.T, o ...httpapi.Options) *fixture {
	t.Helper()
	env := dynamotest.New(t)
	f := &fixture{env: env, proxy: dynamotest.NewProxy(t, env.Endpoint)}
	f.store = dynamo.New(dynamotest.NewClient(t, f.proxy.URL, env.Requests), env.Table,
		dynamo.WithSleep(func(context.Context, time.Duration) error { return nil }))
	if _, err := localdb.SeedDemo(context.Background(), f.store); err != nil {
		t.Fatal(err)
	}
	v, err := nonce.NewVerifier(0, localdb.DemoHookKey)
	if err != nil {
		t.Fatal(err)
	}
	f.h = callback.NewHandler(v, f.store, nil)
	var opts httpapi.Options
	if len(o) > 0 {
		opts = o[0]
	}
	f.api = httpapi.New(f.h, opts)
	f.gw = apigw.New(f.api)
	return f
}

// event is a payload 2.0 event for POST /callback as API Gateway builds it.
func event(body []byte, headers map[string]string, base64Body bool) events.APIGatewayV2HTTPRequest {
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: apigw.CallbackRoute, RawPath: "/callback", Headers: headers,
		Body: string(body),
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			DomainName: "abc123.execute-api.eu-west-1.amazonaws.com", Stage: "$default",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodPost, Path: "/callback"},
		},
	}
	if base64Body {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev
}

// headerMap turns a case's headers into an event's: API Gateway lower-cases
// names and joins repeated ones with commas; lower false keeps the names as
// written (as other event sources may).
func headerMap(hs []hostiletest.Header, lower bool) map[string]string {
	m := map[string]string{"content-type": "application/json"}
	names := map[string]string{}
	for _, h := range hs {
		name := h.Name
		if lower {
			name = strings.ToLower(name)
		}
		if prev, ok := names[strings.ToLower(name)]; ok {
			m[prev] += "," + h.Value
			continue
		}
		names[strings.ToLower(name)] = name
		m[name] = h.Value
	}
	return m
}

func (f *fixture) create(t *testing.T, user, requestID, args string) map[string]any {
	t.Helper()
	body := `{"type":"tool_call","function":{"name":"create_ticket","content":` + args + `},"context":{"externalUserId":"` + user + `","metadata":{"request_id":"` + requestID + `"}}}`
	res, err := f.gw.Handle(context.Background(), event([]byte(body), map[string]string{"x-request-nonce": testNonces(t).Valid}, false))
	if err != nil {
		t.Fatal(err)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Body), &out); err != nil || res.StatusCode != 200 {
		t.Fatalf("create: %d %s", res.StatusCode, res.Body)
	}
	return out
}

// TestHostileCatalogueThroughAPIGateway sends the whole hostile catalogue as
// API Gateway events: bodies as they are and base64-encoded, header names as
// API Gateway lower-cases them and as written.
func TestHostileCatalogueThroughAPIGateway(t *testing.T) {
	for _, mode := range []struct {
		name          string
		base64, lower bool
	}{
		{"plain body, lower-case headers", false, true},
		{"base64 body, lower-case headers", true, true},
		{"plain body, headers as written", false, false},
		{"base64 body, headers as written", true, false},
	} {
		t.Run(mode.name, func(t *testing.T) {
			f := newFixture(t)
			n := testNonces(t)
			secret, _ := f.create(t, hostiletest.Owner, hostiletest.SecretRequestID, hostiletest.SecretArgs)["ticket_id"].(string)
			for _, c := range hostiletest.Cases(n) {
				t.Run(c.Name, func(t *testing.T) {
					body := bytes.ReplaceAll(c.Body, []byte(hostiletest.SecretPlaceholder), []byte(secret))
					hs := c.Headers
					if hs == nil {
						hs = []hostiletest.Header{{Name: protocol.NonceHeader, Value: n.Valid}}
					}
					tickets, ops := f.env.Count(t, "ticket"), f.env.Count(t, "operation")
					res, err := f.gw.Handle(context.Background(), event(body, headerMap(hs, mode.lower), mode.base64))
					if err != nil {
						t.Fatalf("Handle returned an error; API Gateway would answer with its own 502: %v", err)
					}
					if res.Headers["content-type"] != "application/json" || res.Headers["cache-control"] != "no-store" {
						t.Errorf("headers %v", res.Headers)
					}
					checkAnswer(t, c, res.StatusCode, []byte(res.Body), body, secret)
					if got := f.env.Count(t, "ticket") - tickets; got != c.Writes {
						t.Errorf("%d tickets written, want %d", got, c.Writes)
					}
					if got := f.env.Count(t, "operation") - ops; got != c.Writes {
						t.Errorf("%d operations written, want %d", got, c.Writes)
					}
				})
			}
		})
	}
}

func checkAnswer(t *testing.T, c hostiletest.Case, status int, raw, sent []byte, secret string) {
	t.Helper()
	for _, w := range c.Check(status, raw, sent, secret) {
		t.Error(w)
	}
}

func TestBase64Bodies(t *testing.T) {
	f := newFixture(t)
	n := testNonces(t)
	body := []byte(`{"function":{"name":"create_ticket","content":{"title":"Café \u00e9 ✓"}},"context":{"externalUserId":"user-a","metadata":{"request_id":"r-b64"}}}`)
	hdr := map[string]string{"x-request-nonce": n.Valid}
	first, _ := f.gw.Handle(context.Background(), event(body, hdr, true))
	second, _ := f.gw.Handle(context.Background(), event(body, hdr, false))
	if first.StatusCode != 200 || second.StatusCode != 200 ||
		strings.Replace(second.Body, `"deduplicated":true`, `"deduplicated":false`, 1) != first.Body {
		t.Fatalf("base64 then plain:\n%d %s\n%d %s", first.StatusCode, first.Body, second.StatusCode, second.Body)
	}
	for name, b64 := range map[string]string{
		"not base64":         "{not base64}",
		"URL alphabet":       base64.URLEncoding.EncodeToString([]byte{0xfb, 0xff, 0xfe}),
		"truncated":          base64.StdEncoding.EncodeToString(body)[:11],
		"base64 of not JSON": base64.StdEncoding.EncodeToString([]byte("\x00\x01binary")),
	} {
		t.Run(name, func(t *testing.T) {
			ev := event(nil, hdr, false)
			ev.Body, ev.IsBase64Encoded = b64, true
			res, err := f.gw.Handle(context.Background(), ev)
			if err != nil || res.StatusCode != 400 || !strings.Contains(res.Body, `"invalid_request"`) {
				t.Fatalf("%d %s %v", res.StatusCode, res.Body, err)
			}
		})
	}
	if n := f.env.Count(t, "ticket"); n != 1 {
		t.Fatalf("%d tickets, want 1", n)
	}
}

// TestBase64RefusedWithoutDisclosure checks that a body that is not valid
// base64, which is refused before the nonce is read, discloses nothing.
func TestBase64RefusedWithoutDisclosure(t *testing.T) {
	f := newFixture(t)
	ev := event(nil, map[string]string{}, false)
	ev.Body, ev.IsBase64Encoded = "%%%", true
	res, _ := f.gw.Handle(context.Background(), ev)
	if res.StatusCode != 400 || strings.Contains(res.Body, "ticket_id") {
		t.Fatalf("%d %s", res.StatusCode, res.Body)
	}
}

func TestRoutes(t *testing.T) {
	f := newFixture(t)
	n := testNonces(t)
	hdr := map[string]string{"x-request-nonce": n.Valid}
	listing := func(ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		res, err := f.gw.Handle(context.Background(), ev)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	get := events.APIGatewayV2HTTPRequest{RouteKey: apigw.FunctionsRoute, RawPath: "/prod/functions", Headers: hdr,
		RequestContext: events.APIGatewayV2HTTPRequestContext{DomainName: "api.example.com", Stage: "prod",
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: http.MethodGet}}}
	res := listing(get)
	if res.StatusCode != 200 || !strings.Contains(res.Body, `"callbackUrl":"https://api.example.com/prod/callback"`) {
		t.Fatalf("listing: %d %s", res.StatusCode, res.Body)
	}
	get.Headers = map[string]string{}
	if res := listing(get); res.StatusCode != 401 || strings.Contains(res.Body, "create_ticket") {
		t.Fatalf("listing without a nonce: %d %s", res.StatusCode, res.Body)
	}
	// A $default route: the method and the path (without the stage) decide.
	def := get
	def.RouteKey, def.Headers = "$default", hdr
	if res := listing(def); res.StatusCode != 200 {
		t.Fatalf("$default GET /prod/functions: %d %s", res.StatusCode, res.Body)
	}
	// The one router's answers: 405 with Allow for another method of a
	// path served, 404 naming the routes for any other path.
	for name, ev := range map[string]events.APIGatewayV2HTTPRequest{
		"GET /callback": {RouteKey: "GET /callback", Headers: hdr},
		"DELETE /callback": {RouteKey: "$default", RawPath: "/callback", Headers: hdr,
			RequestContext: events.APIGatewayV2HTTPRequestContext{HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: "DELETE"}}},
	} {
		if res := listing(ev); res.StatusCode != 405 || res.Headers["allow"] != "POST" || !strings.Contains(res.Body, "use POST") {
			t.Errorf("%s: %d %v %s", name, res.StatusCode, res.Headers, res.Body)
		}
	}
	if res := listing(events.APIGatewayV2HTTPRequest{RouteKey: "POST /other", Headers: hdr, Body: "{}"}); res.StatusCode != 404 || !strings.Contains(res.Body, "POST /callback") {
		t.Errorf("POST /other: %d %s", res.StatusCode, res.Body)
	}
}

// TestLambdaDeadline gives Handle the context the Lambda runtime gives it,
// with the invocation's deadline, and makes the store hang: the answer is
// busy, before the deadline, with time to spare for writing it.
func TestLambdaDeadline(t *testing.T) {
	for _, op := range []string{"GetItem", "TransactWriteItems"} {
		t.Run(op, func(t *testing.T) {
			f := newFixture(t)
			if op == "TransactWriteItems" {
				f.create(t, "user-a", "warm-up", `{"title":"warm up"}`)
			}
			f.proxy.Inject(op, dynamotest.Fault{Hang: true})
			deadline := time.Now().Add(time.Second)
			ctx, cancel := context.WithDeadline(context.Background(), deadline)
			defer cancel()
			body := []byte(`{"function":{"name":"create_ticket","content":{"title":"x"}},"context":{"externalUserId":"user-a","metadata":{"request_id":"r-1"}}}`)
			res, err := f.gw.Handle(ctx, event(body, map[string]string{"x-request-nonce": testNonces(t).Valid}, false))
			if answered := time.Now(); !answered.Before(deadline) {
				t.Fatalf("answered %v after the deadline", answered.Sub(deadline))
			}
			if err != nil || res.StatusCode != 200 || !strings.Contains(res.Body, `"status":"busy"`) {
				t.Fatalf("%d %s %v", res.StatusCode, res.Body, err)
			}
			if n := f.env.Count(t, "ticket"); op == "GetItem" && n != 0 || op != "GetItem" && n != 1 {
				t.Fatalf("%d tickets after a hang in %s", n, op)
			}
		})
	}
}
