package helpdesk

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Proxy stands in front of a helpdesk this project did not write (Request
// Tracker) and misbehaves as Server does: the same Fault kinds, queued by
// Inject or drawn by ProxyOptions.Random, apply to the requests Classify
// names creates or lookups, which the real helpdesk behind then serves or
// not as the fault says (FailAfter, LoseAnswer and Slow forward the
// request first: the helpdesk does the work and the answer is what
// fails). Every other request passes through untouched. Refuse closes the
// proxy's own address for a while: to the client, the helpdesk is down.
type Proxy struct {
	// URL is the proxy's base URL: the helpdesk's, as the client sees it.
	URL string

	target   string
	classify func(*http.Request) (Op, bool)
	client   *http.Client
	srv      *http.Server
	addr     string

	keyOf    func(body []byte) string
	answered func(op Op, body []byte, at time.Time)
	slots    chan struct{} // nil without MaxInFlight
	inFlight sync.WaitGroup

	mu     sync.Mutex
	queue  []Fault
	random *RandomFaults
	rnd    *rand.Rand
	counts ProxyCounts
	keys   map[string]int

	closing chan struct{} // closed by Close: a held request is dropped

	lnMu     sync.Mutex
	ln       net.Listener
	closed   bool
	refusing bool
	serving  sync.WaitGroup
}

// ProxyCounts counts what reached a Proxy.
type ProxyCounts struct {
	// Creates and Lookups are the requests of each kind that reached it,
	// Faults those it made misbehave, Passed the others it forwarded.
	Creates, Lookups, Faults, Passed int
}

// ProxyOptions configure a Proxy.
type ProxyOptions struct {
	// Random, when set, makes a share of create requests misbehave.
	Random *RandomFaults
	// KeyOf, when set, reads the idempotency key from a create's body,
	// for KeyRequests.
	KeyOf func(body []byte) string
	// Answered, when set, is told when the helpdesk behind answered a
	// request of op (a create's body given), before any fault applies to
	// the answer: for timing what reached the helpdesk.
	Answered func(op Op, body []byte, at time.Time)
	// MaxInFlight, when positive, bounds the requests forwarded at once,
	// as a front does for a helpdesk with that many workers: the others
	// wait in the proxy, and one whose client gave up while it waited is
	// not forwarded, unless a Late fault holds it (then it goes, client or
	// not, as it would through a front that keeps what it was sent). Without it a helpdesk's own backlog could hold a
	// create for longer than any client waits and make it after a lookup
	// said there was none.
	MaxInFlight int
}

// StartProxy serves on addr ("127.0.0.1:0" for any free port) a proxy to
// target (a base URL: scheme://host:port) until Close. classify names the
// requests faults apply to.
func StartProxy(addr, target string, classify func(*http.Request) (Op, bool), o ProxyOptions) (*Proxy, error) {
	p := &Proxy{target: strings.TrimRight(target, "/"), classify: classify, keyOf: o.KeyOf, answered: o.Answered, keys: map[string]int{}, closing: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second},
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	if o.MaxInFlight > 0 {
		p.slots = make(chan struct{}, o.MaxInFlight)
	}
	if o.Random != nil {
		r := *o.Random
		r.Kinds = append([]Fault(nil), r.Kinds...)
		if err := r.check(); err != nil {
			return nil, err
		}
		p.random, p.rnd = &r, rand.New(rand.NewPCG(r.Seed, r.Seed^0x9e3779b97f4a7c15))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p.addr = ln.Addr().String()
	p.URL = "http://" + p.addr
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: ReadHeaderTimeout, MaxHeaderBytes: MaxHeaderBytes}
	p.serve(ln)
	return p, nil
}

// serve runs the server on ln. The caller holds lnMu, or is StartProxy.
func (p *Proxy) serve(ln net.Listener) {
	p.ln = ln
	p.serving.Add(1)
	go func() {
		defer p.serving.Done()
		_ = p.srv.Serve(ln)
	}()
}

// Inject queues f for the next f.Count requests of f.Op. Refuse takes
// effect at once.
func (p *Proxy) Inject(f Fault) error {
	f, err := f.normalize()
	if err != nil {
		return errors.New("helpdesk proxy: fault: " + err.Error())
	}
	if f.Kind == Refuse {
		return p.refuse(f.For)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.queue) >= MaxQueuedFaults {
		return errors.New("helpdesk proxy: too many faults queued")
	}
	p.queue = append(p.queue, f)
	return nil
}

// ClearFaults drops every queued fault.
func (p *Proxy) ClearFaults() {
	p.mu.Lock()
	p.queue = nil
	p.mu.Unlock()
}

// KeyRequests returns, per idempotency key (ProxyOptions.KeyOf), how many
// create requests carrying it reached the proxy, answered or not.
func (p *Proxy) KeyRequests() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return maps.Clone(p.keys)
}

// WaitIdle waits until no request is being forwarded: the helpdesk behind
// has finished with everything it was sent, whether or not its client
// still waits. A test whose clock jumps ahead calls it where real time
// would have passed.
func (p *Proxy) WaitIdle() {
	// The lock orders every request counted so far before the wait (a
	// WaitGroup's Add from zero must happen before its Wait).
	p.mu.Lock()
	p.mu.Unlock() //nolint:staticcheck // an empty critical section, on purpose
	p.inFlight.Wait()
}

// busy counts a request WaitIdle waits for; its caller calls
// p.inFlight.Done when it ends.
func (p *Proxy) busy() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.inFlight.Add(1)
}

// Counts returns what reached the proxy so far.
func (p *Proxy) Counts() ProxyCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts
}

// Close stops the proxy and drops its connections.
func (p *Proxy) Close() error {
	p.lnMu.Lock()
	if !p.closed {
		close(p.closing)
	}
	p.closed = true
	p.lnMu.Unlock()
	err := p.srv.Close()
	p.serving.Wait()
	if c, ok := p.client.Transport.(*http.Transport); ok {
		c.CloseIdleConnections()
	}
	return err
}

// refuse closes the proxy's listener for d, then listens on its address
// again.
func (p *Proxy) refuse(d time.Duration) error {
	p.lnMu.Lock()
	defer p.lnMu.Unlock()
	if p.closed || p.refusing {
		return errors.New("helpdesk proxy: closed, or refusing already")
	}
	p.refusing = true
	// Idle kept-alive connections go too: a client holding one would get
	// through. Requests under way finish.
	p.srv.SetKeepAlivesEnabled(false)
	_ = p.ln.Close()
	p.serving.Add(1)
	go func() {
		defer p.serving.Done()
		time.Sleep(d)
		for {
			p.lnMu.Lock()
			if p.closed {
				p.lnMu.Unlock()
				return
			}
			ln, err := net.Listen("tcp", p.addr)
			if err == nil {
				p.refusing = false
				p.srv.SetKeepAlivesEnabled(true)
				p.serve(ln)
				p.lnMu.Unlock()
				return
			}
			p.lnMu.Unlock()
			time.Sleep(ReopenInterval)
		}
	}()
	return nil
}

// next takes the fault for one request of op, if any.
func (p *Proxy) next(op Op) (Fault, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if op == Create {
		p.counts.Creates++
	} else {
		p.counts.Lookups++
	}
	for i, f := range p.queue {
		if f.Op != op {
			continue
		}
		if f.Count--; f.Count == 0 {
			p.queue = append(p.queue[:i:i], p.queue[i+1:]...)
		} else {
			p.queue[i] = f
		}
		p.counts.Faults++
		return f, true
	}
	if op == Create && p.rnd != nil && p.rnd.Float64() < p.random.Rate {
		p.counts.Faults++
		return p.random.Kinds[p.rnd.IntN(len(p.random.Kinds))], true
	}
	return Fault{}, false
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		http.Error(w, "unreadable request", http.StatusBadRequest)
		return
	}
	op, faulty := p.classify(r)
	if faulty && op == Create && p.keyOf != nil {
		if k := p.keyOf(body); k != "" {
			p.mu.Lock()
			p.keys[k]++
			p.mu.Unlock()
		}
	}
	var f Fault
	if faulty {
		f, faulty = p.next(op)
	}
	if !faulty {
		p.mu.Lock()
		p.counts.Passed++
		p.mu.Unlock()
		a := p.forward(r.Context(), r, body, r.URL.RawQuery)
		if op != "" {
			p.told(op, body, a)
		}
		p.relay(w, a)
		return
	}
	switch f.Kind {
	case FailBefore, RateLimit:
		proxyAnswer(w, f)
		return
	case ResetBefore:
		drop(w, true)
		return
	}
	query := r.URL.RawQuery
	if f.Kind == IgnoreFilter {
		query = ""
	}
	// Whether the client still waits decides whether the request is
	// forwarded (ProxyOptions.MaxInFlight); a late one goes whatever it
	// does.
	waits := r.Context()
	if f.Kind == Late {
		p.busy() // WaitIdle waits for it from now
		defer p.inFlight.Done()
		t := time.NewTimer(f.Delay)
		select {
		case <-t.C:
		case <-p.closing:
			t.Stop()
			return
		}
		waits = context.WithoutCancel(waits)
	}
	a := p.forward(waits, r, body, query)
	p.told(op, body, a)
	switch f.Kind {
	case FailAfter:
		proxyAnswer(w, f)
	case LoseAnswer:
		drop(w, false)
	case Slow:
		t := time.NewTimer(f.Delay)
		defer t.Stop()
		select {
		case <-t.C:
			p.relay(w, a)
		case <-r.Context().Done(): // the client gave up
		}
	default:
		p.relay(w, a)
	}
}

// told tells ProxyOptions.Answered that the helpdesk answered a.
func (p *Proxy) told(op Op, body []byte, a answer) {
	if p.answered != nil && a.status != 0 {
		p.answered(op, body, time.Now())
	}
}

// ForwardTimeout bounds a request the proxy forwards.
const ForwardTimeout = 2 * time.Minute

// answer is what the helpdesk behind answered; status 0 when it could not
// be reached.
type answer struct {
	status int
	header http.Header
	body   []byte
	// gone: the client left before the request was forwarded.
	gone bool
}

// forward sends r on to the helpdesk unless waits ends first (its client
// gave up while it waited for a slot).
func (p *Proxy) forward(waits context.Context, r *http.Request, body []byte, query string) answer {
	p.busy()
	defer p.inFlight.Done()
	if p.slots != nil {
		select {
		case p.slots <- struct{}{}:
			defer func() { <-p.slots }()
		case <-waits.Done():
			return answer{gone: true} // the client gave up first: nothing forwarded
		}
		if waits.Err() != nil {
			return answer{gone: true}
		}
	}
	target := p.target + r.URL.Path
	if query != "" {
		target += "?" + query
	}
	// The helpdesk's work is not cut short by a client that gives up.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), ForwardTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.Method, target, bytes.NewReader(body))
	if err != nil {
		return answer{}
	}
	for k, vs := range r.Header {
		req.Header[k] = vs
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return answer{}
	}
	defer func() { _ = resp.Body.Close() }()
	out, _ := io.ReadAll(resp.Body)
	return answer{status: resp.StatusCode, header: resp.Header, body: out}
}

func (p *Proxy) relay(w http.ResponseWriter, a answer) {
	if a.gone {
		return
	}
	if a.status == 0 {
		// The helpdesk is down: a gateway's answer.
		proxyAnswer(w, Fault{Kind: "helpdesk_unreachable", Status: http.StatusBadGateway})
		return
	}
	for k, vs := range a.header {
		if strings.EqualFold(k, "Content-Length") || strings.EqualFold(k, "Connection") {
			continue
		}
		w.Header()[k] = vs
	}
	w.WriteHeader(a.status)
	_, _ = w.Write(a.body)
}

// proxyAnswer answers with f's status (and Retry-After, and body).
func proxyAnswer(w http.ResponseWriter, f Fault) {
	writeFault(w, f, func(w http.ResponseWriter) {
		writeJSON(w, f.Status, map[string]string{"message": "fault " + string(f.Kind) + " from the local proxy"})
	})
}
