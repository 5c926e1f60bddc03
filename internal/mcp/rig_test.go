package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/dynamo"
	"github.com/oncecall/oncecall/internal/httpapi"
	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/mcp"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/testing/dynamotest"
	"github.com/oncecall/oncecall/internal/testing/logtest"
)

var (
	nonceOnce sync.Once
	goodNonce string
)

// validNonce is a BCrypt hash of the demo hook key at the cheapest cost.
func validNonce() string {
	nonceOnce.Do(func() {
		var err error
		if goodNonce, err = nonce.Generate(localdb.DemoHookKey, nonce.MinCost); err != nil {
			panic(err)
		}
	})
	return goodNonce
}

// rig is the local server (internal/httpapi, as make run serves it) over
// a fresh table seeded with the demo users.
type rig struct {
	logs  *logtest.Buffer
	t     testing.TB
	env   *dynamotest.Env
	store *dynamo.Store
	h     *callback.Handler
	srv   *httptest.Server
}

func newRig(t testing.TB, o mcp.Options) *rig {
	t.Helper()
	env := dynamotest.New(t)
	r := &rig{t: t, env: env, store: dynamo.New(env.Client, env.Table), logs: &logtest.Buffer{}}
	if _, err := localdb.SeedDemo(context.Background(), r.store); err != nil {
		t.Fatal(err)
	}
	v, err := nonce.NewVerifier(0, localdb.DemoHookKey)
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.NewJSONHandler(r.logs, nil))
	r.h = callback.NewHandler(v, r.store, logger)
	api := httpapi.New(r.h, httpapi.Options{MCP: o})
	r.srv = httptest.NewServer(api)
	t.Cleanup(r.srv.Close)
	return r
}

func (r *rig) tickets() int    { return r.env.Count(r.t, "ticket") }
func (r *rig) operations() int { return r.env.Count(r.t, "operation") }

// connect opens a Go SDK client session; version "" lets the client pick
// (2026-07-28 through server/discover).
func (r *rig) connect(version string, header http.Header) *sdk.ClientSession {
	r.t.Helper()
	hc := &http.Client{Transport: headerTransport{header}}
	c := sdk.NewClient(&sdk.Implementation{Name: "oncecall-test", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: r.srv.URL + mcp.Path, HTTPClient: hc, MaxRetries: -1}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		r.t.Fatalf("connect %q: %v", version, err)
	}
	r.t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// headerTransport adds headers to every request, as an MCP source's
// configured headers are.
type headerTransport struct{ h http.Header }

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.h {
		req.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(req)
}

// aivMeta is params._meta as AIVAX sends it.
func aivMeta(user, requestID string) sdk.Meta {
	m := sdk.Meta{
		"_aiv_nonce": validNonce(), "_aiv_call_source": "ChatCompletionsApi",
		"_aiv_conversation_token": "conv-1", "_aiv_moment": "2026-11-30T12:00:00.1234567+00:00",
	}
	if user != "" {
		m["_aiv_external_user_id"] = user
	}
	if requestID != "" {
		m["request_id"] = requestID
	}
	return m
}

// rpc is one raw POST /mcp answer.
type rpc struct {
	status int
	header http.Header
	raw    []byte
	body   struct {
		ID     json.RawMessage `json:"id"`
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int             `json:"code"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
		} `json:"error"`
	}
}

func (p rpc) code() int {
	if p.body.Error == nil {
		return 0
	}
	return p.body.Error.Code
}

// tool decodes a tools/call result.
func (p rpc) tool(t *testing.T) sdk.CallToolResult {
	t.Helper()
	var res struct {
		Content []struct {
			Type, Text string
		}
		StructuredContent json.RawMessage
		IsError           bool
	}
	if err := json.Unmarshal(p.body.Result, &res); err != nil || len(res.Content) != 1 {
		t.Fatalf("not a tool result: %d %s", p.status, p.raw)
	}
	out := sdk.CallToolResult{IsError: res.IsError, Content: []sdk.Content{&sdk.TextContent{Text: res.Content[0].Text}}}
	if res.StructuredContent != nil {
		out.StructuredContent = res.StructuredContent
	}
	return out
}

// post sends a raw body to /mcp with headers (name, value pairs) and
// decodes the JSON-RPC answer.
func (r *rig) post(body string, headers ...string) rpc {
	r.t.Helper()
	p := r.postRaw(body, headers...)
	if len(p.raw) > 0 {
		if err := json.Unmarshal(p.raw, &p.body); err != nil {
			r.t.Fatalf("answer is not JSON: %d %q", p.status, p.raw)
		}
		if ct := p.header.Get("Content-Type"); ct != "application/json" {
			r.t.Errorf("Content-Type %q", ct)
		}
	}
	return p
}

// postRaw sends a raw body to /mcp as an MCP client does, with headers
// (name, value pairs; an empty value removes the header), and returns the
// answer undecoded.
func (r *rig) postRaw(body string, headers ...string) rpc {
	r.t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.srv.URL+mcp.Path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(headers); i += 2 {
		if headers[i+1] == "" {
			req.Header.Del(headers[i])
			continue
		}
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	p := rpc{status: res.StatusCode, header: res.Header}
	p.raw, _ = io.ReadAll(res.Body)
	return p
}

// callBody is a raw tools/call with params._meta meta.
func callBody(id int, name string, args any, meta map[string]any) string {
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
		"params": map[string]any{"name": name, "arguments": args, "_meta": meta}})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// rawMeta is aivMeta as a plain map.
func rawMeta(user, requestID string) map[string]any { return map[string]any(aivMeta(user, requestID)) }

// callbackBody is an AIVAX callback body, for the other door.
func callbackBody(user, requestID, function string, args any) string {
	a, _ := json.Marshal(args)
	ctx, _ := json.Marshal(map[string]any{"externalUserId": user, "metadata": map[string]string{"request_id": requestID},
		"callSource": "ChatCompletionsApi", "moment": "2026-11-30T12:00:00+00:00"})
	return `{"type":"tool_call","function":{"name":"` + function + `","content":` + string(a) + `},"context":` + string(ctx) + `}`
}

// postCallback sends a callback with a valid nonce and decodes its answer.
func (r *rig) postCallback(body string) (int, []byte) {
	r.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, r.srv.URL+httpapi.CallbackPath, bytes.NewReader([]byte(body)))
	req.Header.Set("X-Request-Nonce", validNonce())
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b
}
