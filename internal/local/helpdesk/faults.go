package helpdesk

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Op is the kind of request a fault applies to.
type Op string

// Operations.
const (
	Create Op = "create"
	Lookup Op = "lookup"
)

// FaultKind is what the helpdesk does instead of (or besides) answering.
type FaultKind string

// Fault kinds.
const (
	// LoseAnswer creates the ticket (or replays it), then closes the
	// connection without answering. On a lookup: closes without answering.
	LoseAnswer FaultKind = "lose_answer"
	// FailBefore answers Status (default 503) without creating anything.
	// Any status works: 400, 401, 403, 408, 409, 422 test the client's
	// rules too.
	FailBefore FaultKind = "fail_before"
	// FailAfter creates the ticket, then answers Status (default 500).
	FailAfter FaultKind = "fail_after"
	// RateLimit answers 429 with Retry-After (default "1") without
	// creating.
	RateLimit FaultKind = "rate_limit"
	// Slow creates the ticket and answers only after Delay (default
	// DefaultSlowDelay), past the client's timeout.
	Slow FaultKind = "slow"
	// ResetBefore resets the connection (TCP RST) without creating.
	ResetBefore FaultKind = "reset_before"
	// Refuse closes the listener so that connections are refused, for For
	// (default DefaultRefuseFor), then listens again; ClearFaults and Reset
	// end it early. It takes effect at once and is not counted per request:
	// a refused connection carries no request to count. The control API
	// stays reachable on Options.ControlAddr meanwhile.
	Refuse FaultKind = "refuse"
	// Late holds a create for Delay (default DefaultSlowDelay) without
	// doing anything, whether or not its client still waits, and then
	// does it as if it had just arrived: the ticket is made (the proxy
	// forwards it) though nobody may be left to read the answer. It is a
	// front that forwards a request its client gave up on. It applies to
	// creates only.
	Late FaultKind = "late"
	// IgnoreFilter, on a lookup, lists every ticket lookups may see,
	// whatever ?external_id= asks for, as a helpdesk or proxy that drops
	// the query would. It applies to lookups only.
	IgnoreFilter FaultKind = "ignore_filter"
)

// Fault defaults and bounds.
const (
	DefaultSlowDelay  = 15 * time.Second // past DESTINATION_TIMEOUT's default of 10s
	DefaultRefuseFor  = 2 * time.Second
	DefaultRetryAfter = "1"
	MaxFaultDelay     = 10 * time.Minute
	MaxFaultCount     = 10000
	MaxFaultBody      = 4 << 10
	MaxQueuedFaults   = 1000
)

// Fault is an injected misbehaviour for the next Count requests of Op.
type Fault struct {
	Kind FaultKind
	// Op is the kind of request it applies to (default Create).
	Op Op
	// Count is how many requests it applies to (default 1).
	Count int
	// Status is the answer of FailBefore and FailAfter.
	Status int
	// Body replaces the answer's body with FailBefore and FailAfter.
	Body string
	// RetryAfter is the Retry-After header value: seconds or an HTTP
	// date. Sent with RateLimit (default DefaultRetryAfter), and with
	// FailBefore and FailAfter when set.
	RetryAfter string
	// Delay is how long Slow waits before answering.
	Delay time.Duration
	// For is how long Refuse keeps connections refused.
	For time.Duration
}

// faultJSON is Fault over HTTP, durations as Go duration strings ("2s").
type faultJSON struct {
	Kind       FaultKind `json:"kind"`
	Op         Op        `json:"op,omitempty"`
	Count      int       `json:"count,omitempty"`
	Status     int       `json:"status,omitempty"`
	Body       string    `json:"body,omitempty"`
	RetryAfter string    `json:"retry_after,omitempty"`
	Delay      string    `json:"delay,omitempty"`
	For        string    `json:"for,omitempty"`
}

// MarshalJSON writes durations as Go duration strings.
func (f Fault) MarshalJSON() ([]byte, error) {
	j := faultJSON{Kind: f.Kind, Op: f.Op, Count: f.Count, Status: f.Status, Body: f.Body, RetryAfter: f.RetryAfter}
	if f.Delay != 0 {
		j.Delay = f.Delay.String()
	}
	if f.For != 0 {
		j.For = f.For.String()
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads durations as Go duration strings.
func (f *Fault) UnmarshalJSON(b []byte) error {
	var j faultJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	g := Fault{Kind: j.Kind, Op: j.Op, Count: j.Count, Status: j.Status, Body: j.Body, RetryAfter: j.RetryAfter}
	var err error
	if j.Delay != "" {
		if g.Delay, err = time.ParseDuration(j.Delay); err != nil {
			return fmt.Errorf("delay: %w", err)
		}
	}
	if j.For != "" {
		if g.For, err = time.ParseDuration(j.For); err != nil {
			return fmt.Errorf("for: %w", err)
		}
	}
	*f = g
	return nil
}

// normalize fills in defaults and checks f.
func (f Fault) normalize() (Fault, error) {
	if f.Op == "" {
		f.Op = Create
	}
	if f.Count == 0 {
		f.Count = 1
	}
	switch {
	case f.Op != Create && f.Op != Lookup:
		return f, fmt.Errorf("op must be %q or %q", Create, Lookup)
	case f.Count < 0 || f.Count > MaxFaultCount:
		return f, fmt.Errorf("count must be 1 to %d", MaxFaultCount)
	case f.Delay < 0 || f.Delay > MaxFaultDelay || f.For < 0 || f.For > MaxFaultDelay:
		return f, fmt.Errorf("delay and for must be 0 to %s", MaxFaultDelay)
	case len(f.Body) > MaxFaultBody:
		return f, fmt.Errorf("body must be at most %d bytes", MaxFaultBody)
	case f.Status != 0 && (f.Status < 200 || f.Status > 599):
		return f, fmt.Errorf("status must be 200 to 599")
	}
	switch f.Kind {
	case FailBefore:
		f.Status = cmp(f.Status, http.StatusServiceUnavailable)
	case FailAfter:
		f.Status = cmp(f.Status, http.StatusInternalServerError)
	case RateLimit:
		f.Status = http.StatusTooManyRequests
		if f.RetryAfter == "" {
			f.RetryAfter = DefaultRetryAfter
		}
	case Slow, Late:
		if f.Delay == 0 {
			f.Delay = DefaultSlowDelay
		}
		if f.Kind == Late && f.Op != Create {
			return f, fmt.Errorf("%s applies to op %q only", Late, Create)
		}
	case Refuse:
		if f.For == 0 {
			f.For = DefaultRefuseFor
		}
	case IgnoreFilter:
		if f.Op != Lookup {
			return f, fmt.Errorf("%s applies to op %q only", IgnoreFilter, Lookup)
		}
	case LoseAnswer, ResetBefore:
	default:
		return f, fmt.Errorf("kind must be one of %s, %s, %s, %s, %s, %s, %s, %s, %s",
			LoseAnswer, FailBefore, FailAfter, RateLimit, Slow, Late, ResetBefore, Refuse, IgnoreFilter)
	}
	return f, nil
}

func cmp(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Inject queues f for the next f.Count requests of f.Op, after the faults
// already queued for that kind of request. Refuse takes effect at once.
func (s *Server) Inject(f Fault) error {
	f, err := f.normalize()
	if err != nil {
		return fmt.Errorf("helpdesk: fault: %w", err)
	}
	if f.Kind == Refuse {
		return s.refuse(f.For)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.queue) >= MaxQueuedFaults {
		return fmt.Errorf("helpdesk: fault: at most %d faults may be queued", MaxQueuedFaults)
	}
	s.queue = append(s.queue, f)
	return nil
}

// Faults returns the faults still queued, Count saying how many requests
// each still applies to.
func (s *Server) Faults() []Fault {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Fault{}, s.queue...)
}

// ClearFaults drops every queued fault and ends a refusal under way.
func (s *Server) ClearFaults() {
	s.mu.Lock()
	s.queue = nil
	s.mu.Unlock()
	s.endRefusal()
}

// RandomFaults makes a share of create requests misbehave without being
// queued one by one: each create request that no queued fault applies to
// gets, with probability Rate, one of Kinds drawn at random. Refuse cannot
// be among them (it refuses connections, not one request).
type RandomFaults struct {
	Rate  float64
	Kinds []Fault
	// Seed makes the draws reproducible.
	Seed uint64
}

func (r *RandomFaults) check() error {
	if r.Rate < 0 || r.Rate > 1 {
		return errors.New("helpdesk: random fault rate must be 0 to 1")
	}
	if r.Rate > 0 && len(r.Kinds) == 0 {
		return errors.New("helpdesk: random faults need kinds")
	}
	for i, f := range r.Kinds {
		n, err := f.normalize()
		if err != nil {
			return fmt.Errorf("helpdesk: random fault: %w", err)
		}
		if n.Kind == Refuse {
			return errors.New("helpdesk: refuse cannot be a random fault")
		}
		n.Op, n.Count = Create, 1
		r.Kinds[i] = n
	}
	return nil
}

// next takes the fault for one request of op, if any. The caller holds mu.
func (s *Server) next(op Op) (Fault, bool) {
	f, ok := s.queued(op)
	if ok || op != Create || s.rnd == nil || s.rnd.Float64() >= s.opts.Random.Rate {
		return f, ok
	}
	s.st.counts.Faults++
	return s.opts.Random.Kinds[s.rnd.IntN(len(s.opts.Random.Kinds))], true
}

// queued takes the first queued fault for op. The caller holds mu.
func (s *Server) queued(op Op) (Fault, bool) {
	for i, f := range s.queue {
		if f.Op != op {
			continue
		}
		if f.Count--; f.Count == 0 {
			s.queue = append(s.queue[:i:i], s.queue[i+1:]...)
		} else {
			s.queue[i] = f
		}
		f.Count = 1
		s.st.counts.Faults++
		return f, true
	}
	return Fault{}, false
}
