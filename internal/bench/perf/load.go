package perf

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/local/localdb"
	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
)

// Client sends callbacks over loopback with keep-alive connections.
type Client struct {
	http  *http.Client
	Nonce string
}

// NewClient returns a Client that sends nonce ("" for none) with every call.
func NewClient(nonce string) *Client {
	return &Client{Nonce: nonce, http: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConns: 64, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second},
	}}
}

// Close drops the idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// Reply is one answer.
type Reply struct {
	Status int
	Body   map[string]any
	Raw    []byte
}

// Kind names the answer: created, deduplicated, an error code or a status.
func (r Reply) Kind() string {
	if r.Body["deduplicated"] == true {
		return "deduplicated"
	}
	if e, ok := r.Body["error"].(map[string]any); ok {
		if c, ok := e["code"].(string); ok {
			return c
		}
	}
	s, _ := r.Body["status"].(string)
	return s
}

// DemoClient is a Client whose nonce is a fresh hash of the local demo
// hook key at cost.
func DemoClient(cost int) (*Client, error) {
	hash, err := nonce.Generate(localdb.DemoHookKey, cost)
	if err != nil {
		return nil, err
	}
	return NewClient(hash), nil
}

// Create sends a create_ticket of user under request id request and
// returns the ticket it created; any other answer is an error.
func (c *Client) Create(url, user, request string) (string, error) {
	reply, _, err := c.Post(url, CreateBody(user, request))
	if err != nil {
		return "", err
	}
	id, _ := reply.Body["ticket_id"].(string)
	if reply.Kind() != "created" || id == "" {
		return "", fmt.Errorf("create answered %s", reply.Raw)
	}
	return id, nil
}

// Post sends one callback and times it.
func (c *Client) Post(url string, body []byte) (Reply, time.Duration, error) {
	h := map[string]string{}
	if c.Nonce != "" {
		h[protocol.NonceHeader] = c.Nonce
	}
	r, d, err := c.send(url, body, h)
	if err != nil {
		return r, d, err
	}
	if err := json.Unmarshal(r.Raw, &r.Body); err != nil {
		return r, d, fmt.Errorf("answer is not JSON: %q", r.Raw)
	}
	return r, d, nil
}

// send posts a JSON body with headers and times the answer, read whole.
func (c *Client) send(url string, body []byte, headers map[string]string) (Reply, time.Duration, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Reply{}, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	start := time.Now()
	res, err := c.http.Do(req)
	if err != nil {
		return Reply{}, 0, err
	}
	raw, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	return Reply{Status: res.StatusCode, Raw: raw}, time.Since(start), err
}

// MCPBody is the MCP tools/call that carries the callback body cb, as
// AIVAX sends it: the arguments in params.arguments, the nonce, the user
// and the metadata flat in params._meta.
func MCPBody(cb []byte, nonce string) []byte {
	var in struct {
		Function struct {
			Name    string         `json:"name"`
			Content map[string]any `json:"content"`
		} `json:"function"`
		Context struct {
			ExternalUserID string            `json:"externalUserId"`
			CallSource     string            `json:"callSource"`
			Metadata       map[string]string `json:"metadata"`
		} `json:"context"`
	}
	if err := json.Unmarshal(cb, &in); err != nil {
		panic("perf: MCPBody of a body that is not a callback: " + err.Error())
	}
	meta := map[string]any{"_aiv_nonce": nonce, "_aiv_external_user_id": in.Context.ExternalUserID, "_aiv_call_source": "McpClient"}
	for k, v := range in.Context.Metadata {
		meta[k] = v
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": in.Function.Name, "arguments": in.Function.Content, "_meta": meta}})
	return b
}

// PostMCP sends the callback body cb through the MCP door at url, as
// MCPBody carries it, and returns the callback's answer the tool result
// holds (its structuredContent, or an error naming the refusal's code).
func (c *Client) PostMCP(url string, cb []byte) (Reply, time.Duration, error) {
	r, d, err := c.send(url, MCPBody(cb, c.Nonce), map[string]string{"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"})
	if err != nil {
		return r, d, err
	}
	raw := r.Raw
	var rpc struct {
		Result struct {
			StructuredContent map[string]any
			Content           []struct{ Text string }
			IsError           bool
		}
		Error *struct {
			Data struct{ Code string }
		}
	}
	if err := json.Unmarshal(raw, &rpc); err != nil {
		return r, d, fmt.Errorf("answer is not JSON: %q", raw)
	}
	switch {
	case rpc.Error != nil:
		r.Body = map[string]any{"error": map[string]any{"code": rpc.Error.Data.Code}}
	case rpc.Result.IsError && len(rpc.Result.Content) == 1:
		code, _, _ := strings.Cut(rpc.Result.Content[0].Text, ":")
		r.Body = map[string]any{"error": map[string]any{"code": code}}
	default:
		r.Body = rpc.Result.StructuredContent
	}
	return r, d, nil
}

// Expect posts and checks the kind of answer.
func (c *Client) Expect(url string, body []byte, kind string) (time.Duration, error) {
	r, d, err := c.Post(url, body)
	if err != nil {
		return d, err
	}
	if r.Kind() != kind {
		return d, fmt.Errorf("%s answered %d %s, want %s", url, r.Status, r.Raw, kind)
	}
	return d, nil
}

// CreateBody is a realistic create_ticket callback of user with requestID.
func CreateBody(user, requestID string) []byte {
	return []byte(`{"type":"tool_call","function":{"name":"create_ticket","content":{"title":"Cannot sign in","description":"Since this morning the login page says my password is wrong.\nI reset it twice.","priority":"high","tags":["login","web"]}},"context":{"externalUserId":"` +
		user + `","callSource":"ChatCompletionsApi","conversationToken":"conv-3f1c","moment":"2026-11-30T12:00:00.1234+00:00","metadata":{"request_id":"` + requestID + `"}}}`)
}

// GetBody is a get_ticket callback.
func GetBody(user, ticketID string) []byte {
	return []byte(`{"type":"tool_call","function":{"name":"get_ticket","content":{"ticket_id":"` + ticketID + `"}},"context":{"externalUserId":"` + user + `","metadata":{}}}`)
}

// Durations is a set of timings.
type Durations []time.Duration

// Quantile returns the q-quantile (0..1) by nearest rank.
func (ds Durations) Quantile(q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Mean is the arithmetic mean.
func (ds Durations) Mean() time.Duration {
	if len(ds) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	return sum / time.Duration(len(ds))
}

// P50 is the median.
func (ds Durations) P50() time.Duration { return ds.Quantile(0.5) }

// P99 is the 99th percentile.
func (ds Durations) P99() time.Duration { return ds.Quantile(0.99) }

// ms formats a duration in milliseconds.
func ms(d time.Duration) string { return ftoa(float64(d)/float64(time.Millisecond), 2) + " ms" }

func ftoa(f float64, prec int) string { return strconv.FormatFloat(f, 'f', prec, 64) }

// ratio formats a/b.
func ratio(a, b float64) string {
	if b == 0 {
		return "n/a"
	}
	return ftoa(a/b, 3)
}
