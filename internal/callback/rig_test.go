package callback_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/testing/logtest"
	"github.com/oncecall/oncecall/internal/ticket"
)

// testCost keeps bcrypt cheap in tests; the verifier accepts any cost up to
// its maximum, so the code path is the one cost 9 takes.
const testCost = nonce.MinCost

var (
	nonceOnce sync.Once
	goodNonce string
)

func validNonce(_ testing.TB) string {
	nonceOnce.Do(func() {
		var err error
		if goodNonce, err = nonce.Generate(localdb.DemoHookKey, testCost); err != nil {
			panic(err)
		}
	})
	return goodNonce
}

// rig is one callback server over HTTP on loopback, backed by a fresh table
// of a real DynamoDB-compatible store, seeded with the demo users.
type rig struct {
	t     testing.TB
	env   *dynamotest.Env
	store *dynamo.Store
	h     *callback.Handler
	srv   *httptest.Server
	logs  *logtest.Buffer
	now   time.Time
	mu    sync.Mutex
	// realSleep makes the store wait out its backoffs (see withRealSleep).
	realSleep bool
	// timeout, when set, shortens each request's deadline (withTimeout).
	timeout time.Duration
}

// rigOption changes how a rig is built; it returns the store client to
// use, or nil to keep the one it has.
type rigOption func(*rig, *dynamotest.Env) dynamo.API

// withTimeout gives every request a deadline of d instead of
// httpapi.RequestTimeout, for tests that wait it out; the store waits out
// its backoffs then too, as in production.
func withTimeout(d time.Duration) rigOption {
	return func(r *rig, _ *dynamotest.Env) dynamo.API { r.timeout, r.realSleep = d, true; return nil }
}

// withRealSleep makes the store wait out its backoffs, as it does in
// production, instead of skipping them: for tests where other requests
// must run meanwhile (contention).
func withRealSleep() rigOption {
	return func(r *rig, _ *dynamotest.Env) dynamo.API { r.realSleep = true; return nil }
}

// viaProxy routes the store client through a fault-injecting proxy.
func viaProxy(p **dynamotest.Proxy) rigOption {
	return func(r *rig, env *dynamotest.Env) dynamo.API {
		*p = dynamotest.NewProxy(r.t, env.Endpoint)
		return dynamotest.NewClient(r.t, (*p).URL, env.Requests)
	}
}

func newRig(t testing.TB, opts ...rigOption) *rig {
	t.Helper()
	env := dynamotest.New(t)
	r := &rig{t: t, env: env, logs: &logtest.Buffer{}, now: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	var api dynamo.API = env.Client
	for _, o := range opts {
		if a := o(r, env); a != nil {
			api = a
		}
	}
	logger := slog.New(slog.NewJSONHandler(r.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	storeOpts := []dynamo.Option{dynamo.WithClock(r.clock), dynamo.WithLogger(logger)}
	if !r.realSleep {
		storeOpts = append(storeOpts, dynamo.WithSleep(func(context.Context, time.Duration) error { return nil }))
	}
	r.store = dynamo.New(api, env.Table, storeOpts...)
	if _, err := localdb.SeedDemo(context.Background(), r.store); err != nil {
		t.Fatal(err)
	}
	v, err := nonce.NewVerifier(0, localdb.DemoHookKey)
	if err != nil {
		t.Fatal(err)
	}
	r.h = callback.NewHandler(v, r.store, logger)
	r.h.Now = r.clock
	var srv http.Handler = httpapi.New(r.h, httpapi.Options{})
	if r.timeout > 0 {
		inner := srv
		srv = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			ctx, cancel := context.WithTimeout(req.Context(), r.timeout)
			defer cancel()
			inner.ServeHTTP(w, req.WithContext(ctx))
		})
	}
	r.srv = httptest.NewServer(srv)
	t.Cleanup(r.srv.Close)
	env.Requests.Reset()
	return r
}

func (r *rig) clock() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

func (r *rig) advance(d time.Duration) {
	r.mu.Lock()
	r.now = r.now.Add(d)
	r.mu.Unlock()
}

// reply is a decoded answer.
type reply struct {
	status int
	raw    string
	body   map[string]any
}

func (p reply) str(name string) string {
	v, _ := p.body[name].(string)
	return v
}

func (p reply) code() string {
	e, _ := p.body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

func (p reply) message() string {
	e, _ := p.body["error"].(map[string]any)
	m, _ := e["message"].(string)
	return m
}

// post sends body to /callback with the given nonce ("" sends none).
func (r *rig) post(nonceHeader, body string) reply {
	r.t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.srv.URL+httpapi.CallbackPath, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if nonceHeader != "" {
		req.Header.Set("X-Request-Nonce", nonceHeader)
	}
	return r.do(req)
}

func (r *rig) do(req *http.Request) reply {
	r.t.Helper()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	p := reply{status: res.StatusCode, raw: string(raw)}
	if err := json.Unmarshal(raw, &p.body); err != nil {
		r.t.Fatalf("answer is not JSON: %q", raw)
	}
	return p
}

// call posts an authenticated callback.
func (r *rig) call(body string) reply {
	r.t.Helper()
	return r.post(validNonce(r.t), body)
}

// callBody builds an AIVAX callback body.
func callBody(user, requestID, function, args string) string {
	ctx := map[string]any{"callSource": "ChatCompletionsApi", "conversationToken": "conv-1", "moment": "2026-11-30T12:00:00.1234+00:00"}
	if user != "" {
		ctx["externalUserId"] = user
	}
	md := map[string]string{}
	if requestID != "" {
		md["request_id"] = requestID
	}
	ctx["metadata"] = md
	c, _ := json.Marshal(ctx)
	return `{"type":"tool_call","function":{"name":"` + function + `","content":` + args + `},"context":` + string(c) + `}`
}

func create(user, requestID, args string) string {
	return callBody(user, requestID, "create_ticket", args)
}

// tickets counts ticket items in the store.
func (r *rig) tickets() int { return r.env.Count(r.t, "ticket") }

// operations counts operation items in the store.
func (r *rig) operations() int { return r.env.Count(r.t, "operation") }

// opKey is the operation key the handler derives for a create_ticket call
// with args (JSON) by a user of tenant: the arguments normalized, then
// keyed, as the handler does.
func opKey(t testing.TB, pol idempotency.Policy, tenant, requestID, args string) idempotency.Key {
	t.Helper()
	raw, err := parseArgs(args)
	if err != nil {
		t.Fatal(err)
	}
	norm, v := ticket.Create.Normalize(raw)
	if len(v) > 0 {
		t.Fatalf("arguments %s: %v", args, v)
	}
	key, err := idempotency.Derive(pol, idempotency.Operation{Tenant: tenant, RequestID: requestID, Function: ticket.CreateName, Arguments: norm})
	if err != nil {
		t.Fatal(err)
	}
	return key
}
