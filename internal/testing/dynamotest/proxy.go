package dynamotest

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Fault is what the Proxy does to one request instead of, or besides,
// forwarding it.
type Fault struct {
	// Error, when set, answers with this DynamoDB error type (for example
	// "ThrottlingException") without forwarding.
	Error string
	// Status is the HTTP status of Error (default 400).
	Status int
	// Reasons, with Error "TransactionCanceledException", are the
	// cancellation reason codes, in request order.
	Reasons []string
	// Delay waits before doing anything else; with nothing else set the
	// request is then forwarded.
	Delay time.Duration
	// Hang blocks until the client gives up (its context ends).
	Hang bool
	// AfterCommit forwards the request and then, whatever the store
	// answered, replies 500 as if the process died after the commit.
	AfterCommit bool
}

// Proxy sits between the SDK and a store and injects faults per operation
// (the X-Amz-Target suffix, such as "TransactWriteItems"), for what no
// emulator models: throttling, errors, latency and an answer lost after the
// write applied.
type Proxy struct {
	URL string

	target string
	client *http.Client

	mu         sync.Mutex
	faults     map[string][]Fault
	seen       map[string]int
	consistent map[string]int

	// Conflicts, when set, applies DynamoDB's transaction conflict rule
	// (and, with its LoseRate, loses answers of applied writes) to every
	// request that no injected fault answers.
	Conflicts *Conflicts
	// Tokens, when set, applies DynamoDB's rule for a transaction's
	// ClientRequestToken to every request that no injected fault answers.
	Tokens *Tokens
}

// NewProxy starts a proxy to target for the duration of the test.
func NewProxy(t testing.TB, target string) *Proxy {
	p, stop := StartProxy(target)
	t.Cleanup(stop)
	return p
}

// StartProxy starts a proxy to target until stop, for the benchmarks.
func StartProxy(target string) (p *Proxy, stop func()) {
	tr := &http.Transport{MaxIdleConnsPerHost: 512}
	p = &Proxy{target: strings.TrimRight(target, "/"), client: &http.Client{Transport: tr}, faults: map[string][]Fault{}, seen: map[string]int{}, consistent: map[string]int{}}
	srv := httptest.NewServer(p)
	p.URL = srv.URL
	return p, func() {
		srv.Close()
		tr.CloseIdleConnections()
	}
}

// SetConflicts sets Conflicts under the proxy's lock: for a proxy already
// serving requests of other processes, which no assignment of the field
// would be ordered with.
func (p *Proxy) SetConflicts(c *Conflicts) {
	p.mu.Lock()
	p.Conflicts = c
	p.mu.Unlock()
}

func (p *Proxy) conflicts() *Conflicts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.Conflicts
}

func (p *Proxy) tokens() *Tokens {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.Tokens
}

// Inject queues faults for the next requests of operation op, one per
// request, in order.
func (p *Proxy) Inject(op string, faults ...Fault) {
	p.mu.Lock()
	p.faults[op] = append(p.faults[op], faults...)
	p.mu.Unlock()
}

// Clear drops the faults still queued for op.
func (p *Proxy) Clear(op string) {
	p.mu.Lock()
	delete(p.faults, op)
	p.mu.Unlock()
}

// Seen reports how many requests of op reached the proxy.
func (p *Proxy) Seen(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.seen[op]
}

// ConsistentReads reports how many requests of op that reached the proxy
// asked for a strongly consistent read ("ConsistentRead": true).
func (p *Proxy) ConsistentReads(op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.consistent[op]
}

func (p *Proxy) next(op string, body []byte) (Fault, bool) {
	var read struct{ ConsistentRead bool }
	_ = json.Unmarshal(body, &read)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen[op]++
	if read.ConsistentRead {
		p.consistent[op]++
	}
	q := p.faults[op]
	if len(q) == 0 {
		return Fault{}, false
	}
	p.faults[op] = q[1:]
	return q[0], true
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op := target[strings.LastIndexByte(target, '.')+1:]
	body, _ := io.ReadAll(r.Body)
	f, ok := p.next(op, body)
	if ok {
		if f.Delay > 0 {
			select {
			case <-time.After(f.Delay):
			case <-r.Context().Done():
				return
			}
		}
		if f.Hang {
			<-r.Context().Done()
			return
		}
		if f.Error != "" {
			writeError(w, f)
			return
		}
	}
	if k := p.tokens(); k != nil {
		if tf := k.admit(op, body); tf != nil {
			writeError(w, *tf)
			return
		}
	}
	release := func() {}
	rule := p.conflicts()
	if rule != nil {
		var cf *Fault
		if cf, release = rule.admit(op, body); cf != nil {
			writeError(w, *cf)
			return
		}
	}
	status, header, out := p.forward(r, body)
	release()
	if rule != nil && rule.lose(op, status) {
		writeError(w, Fault{Error: "InternalServerError", Status: http.StatusInternalServerError})
		return
	}
	if ok && f.AfterCommit {
		writeError(w, Fault{Error: "InternalServerError", Status: http.StatusInternalServerError})
		return
	}
	for k, vs := range header {
		if strings.EqualFold(k, "Content-Length") {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(out)
}

func (p *Proxy) forward(r *http.Request, body []byte) (int, http.Header, []byte) {
	req, err := http.NewRequestWithContext(r.Context(), http.MethodPost, p.target+r.URL.Path, bytes.NewReader(body))
	if err != nil {
		return http.StatusBadGateway, nil, nil
	}
	for k, vs := range r.Header {
		req.Header[k] = vs
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return http.StatusBadGateway, nil, []byte(err.Error())
	}
	defer func() { _ = resp.Body.Close() }()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, out
}

func writeError(w http.ResponseWriter, f Fault) {
	status := f.Status
	if status == 0 {
		status = http.StatusBadRequest
	}
	body := map[string]any{"__type": "com.amazonaws.dynamodb.v20120810#" + f.Error, "message": "injected " + f.Error}
	if len(f.Reasons) > 0 {
		reasons := make([]map[string]string, len(f.Reasons))
		for i, c := range f.Reasons {
			reasons[i] = map[string]string{"Code": c}
		}
		body["CancellationReasons"] = reasons
		body["Message"] = "Transaction cancelled"
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
