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
	"time"

	"github.com/oncecall/oncecall/internal/dev/localdb"
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
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return Reply{}, 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.Nonce != "" {
		req.Header.Set(protocol.NonceHeader, c.Nonce)
	}
	start := time.Now()
	res, err := c.http.Do(req)
	if err != nil {
		return Reply{}, 0, err
	}
	raw, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	d := time.Since(start)
	if err != nil {
		return Reply{}, d, err
	}
	r := Reply{Status: res.StatusCode, Raw: raw}
	if err := json.Unmarshal(raw, &r.Body); err != nil {
		return r, d, fmt.Errorf("answer is not JSON: %q", raw)
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
