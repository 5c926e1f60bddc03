package helpdesk

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/oncecall/oncecall/internal/delivery"
)

// DefaultAddr is where internal/local/cmd/oncecall-helpdesk serves; DefaultControlAddr
// is where it serves the control API alone besides (Options.ControlAddr),
// which a refuse fault leaves open.
const (
	DefaultAddr        = "127.0.0.1:8025"
	DefaultControlAddr = "127.0.0.1:8026"
)

// Server limits.
const (
	// MaxRequestBytes bounds a request body; a longer one is answered 413.
	MaxRequestBytes = 256 << 10
	// MaxKeyLength bounds an Idempotency-Key, as Zendesk does (255
	// characters); a longer one is answered 400.
	MaxKeyLength = 255
	// MaxHeaderBytes bounds a request's header block.
	MaxHeaderBytes = 64 << 10
	// ReadHeaderTimeout bounds reading a request's header block.
	ReadHeaderTimeout = 5 * time.Second
	// ReopenInterval is how often a refused listener retries taking its
	// address back if something else holds it.
	ReopenInterval = 20 * time.Millisecond
)

// Paths served.
const (
	// WebhookPath is the webhook contract's URL path: POST creates, GET
	// with ?external_id= looks up, GET /tickets/{id} shows one ticket.
	WebhookPath = "/tickets"
	// ZendeskPath is the Zendesk shape's tickets path (".json" optional).
	ZendeskPath = "/api/v2/tickets"
	// AgentPath is where a person opens a ticket, as on Zendesk:
	// /agent/tickets/{id}.
	AgentPath = "/agent/tickets"
	// ControlPath is the root of the control API.
	ControlPath = "/_helpdesk"
)

// Options configure a Server.
type Options struct {
	// Capabilities are the helpdesk's behaviour towards duplicates:
	// DedupWindow (0: every create makes a ticket), ReplaysErrors (with
	// a window: a key whose create was answered with an error, by
	// FailBefore or FailAfter, gets that error again), Lookup (lookups
	// answered, else 404) and SettleDelay (how long a new ticket stays
	// invisible to lookups).
	Capabilities delivery.Capabilities
	// Token, when set, is the bearer token the webhook front requires.
	Token string
	// ZendeskEmail and ZendeskAPIToken, when both set, are API-token
	// credentials the Zendesk front accepts (Basic "{email}/token:{token}").
	ZendeskEmail, ZendeskAPIToken string
	// ZendeskOAuthToken, when set, is a bearer token the Zendesk front
	// accepts. With no Zendesk credentials at all, it accepts any request.
	ZendeskOAuthToken string
	// Now is the clock for windows and lags; nil means time.Now.
	Now func() time.Time
	// Random, when set, makes a share of create requests misbehave.
	Random *RandomFaults
	// Log, when set, receives one line per request: front, operation,
	// status and fault. Never a body or a credential.
	Log *slog.Logger
	// ControlAddr, when set, is a second address serving the control API
	// alone. The main address serves it too, but a refuse fault closes
	// the main address; this one stays open, so that a refusal can be
	// watched and ended (DELETE faults, POST reset) while it lasts.
	ControlAddr string
}

// Server is a running local helpdesk. It is safe for concurrent use.
type Server struct {
	opts Options
	addr string // host:port actually bound
	http *http.Server

	mu    sync.Mutex
	st    state
	caps  delivery.Capabilities
	queue []Fault
	rnd   *rand.Rand // draws Options.Random's faults; nil without them

	control *http.Server // on Options.ControlAddr; nil without one
	ctlAddr string

	lnMu     sync.Mutex
	ln       net.Listener
	closed   bool
	refusing bool
	// unrefuse ends the refusal under way early (ClearFaults, Reset).
	unrefuse chan struct{}
	closing  chan struct{}
	serving  sync.WaitGroup // Serve loops and listener reopeners
	handlers sync.WaitGroup // requests being handled; Add only under lnMu while open
}

// Start listens on addr ("" for DefaultAddr, "127.0.0.1:0" for any free
// loopback port) and serves until Close.
func Start(addr string, opts Options) (*Server, error) {
	if addr == "" {
		addr = DefaultAddr
	}
	if err := checkCapabilities(opts.Capabilities); err != nil {
		return nil, err
	}
	var rnd *rand.Rand
	if opts.Random != nil {
		r := *opts.Random
		r.Kinds = append([]Fault(nil), r.Kinds...)
		if err := r.check(); err != nil {
			return nil, err
		}
		opts.Random = &r
		rnd = rand.New(rand.NewPCG(r.Seed, r.Seed^0x9e3779b97f4a7c15))
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	var ctl net.Listener
	if opts.ControlAddr != "" {
		if ctl, err = net.Listen("tcp", opts.ControlAddr); err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("%w: %w", ErrControlAddr, err)
		}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Server{opts: opts, addr: ln.Addr().String(), caps: opts.Capabilities, closing: make(chan struct{}), rnd: rnd}
	s.st.reset()
	s.http = &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: ReadHeaderTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
	}
	if ctl != nil {
		mux := http.NewServeMux()
		s.controlRoutes(mux)
		s.control = &http.Server{Handler: mux, ReadHeaderTimeout: ReadHeaderTimeout, MaxHeaderBytes: MaxHeaderBytes}
		s.ctlAddr = ctl.Addr().String()
		s.serving.Add(1)
		go func() {
			defer s.serving.Done()
			if err := s.control.Serve(ctl); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.logf("serve", "error", err.Error())
			}
		}()
	}
	s.lnMu.Lock()
	s.serve(ln)
	s.lnMu.Unlock()
	return s, nil
}

// ErrControlAddr is the error of a Start whose control address
// (Options.ControlAddr) could not listen.
var ErrControlAddr = errors.New("helpdesk: control API")

// ControlAddrFor is the control address that goes with main when none is
// asked for: DefaultControlAddr for DefaultAddr, else any free port on
// main's host, which ControlURL reports once it listens. Never a port
// guessed from main's: nothing would have checked that it was free.
func ControlAddrFor(main string) string {
	if main == "" || main == DefaultAddr {
		return DefaultControlAddr
	}
	host, _, err := net.SplitHostPort(main)
	if err != nil {
		return ""
	}
	return net.JoinHostPort(host, "0")
}

// ControlURL is the base URL of the listener that serves the control API
// alone (Options.ControlAddr), open during a refuse fault; URL without
// one.
func (s *Server) ControlURL() string {
	if s.control == nil {
		return s.URL()
	}
	return "http://" + s.ctlAddr
}

// URL is the server's base URL, http://host:port: the Zendesk shape's base
// URL (DESTINATION_URL with DESTINATION=zendesk).
func (s *Server) URL() string { return "http://" + s.addr }

// WebhookURL is the webhook contract's URL (DESTINATION_URL with
// DESTINATION=webhook).
func (s *Server) WebhookURL() string { return s.URL() + WebhookPath }

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return s.addr }

// Close stops the server, drops every connection and waits for its
// goroutines.
func (s *Server) Close() error {
	s.lnMu.Lock()
	if s.closed {
		s.lnMu.Unlock()
		return nil
	}
	s.closed = true
	s.lnMu.Unlock()
	err := s.http.Close() // listener and connections first: a slow answer is never sent
	if s.control != nil {
		_ = s.control.Close()
	}
	close(s.closing)
	s.serving.Wait()
	s.handlers.Wait()
	if errors.Is(err, net.ErrClosed) {
		err = nil // a listener that refuse closed, not yet forgotten by Serve
	}
	return err
}

// serve runs the HTTP server on ln. The caller holds lnMu.
func (s *Server) serve(ln net.Listener) {
	s.ln = ln
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		err := s.http.Serve(ln)
		if err != nil && !errors.Is(err, http.ErrServerClosed) && !errors.Is(err, net.ErrClosed) {
			s.logf("serve", "error", err.Error())
		}
	}()
}

// refuse closes the listener so that connections are refused, drops idle
// kept-alive connections (a client holding one would otherwise still get
// through) and listens again on the same address after d.
func (s *Server) refuse(d time.Duration) error {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	switch {
	case s.closed:
		return errors.New("helpdesk: closed")
	case s.refusing:
		return errors.New("helpdesk: already refusing connections")
	}
	s.refusing = true
	s.http.SetKeepAlivesEnabled(false) // closes idle connections too
	_ = s.ln.Close()
	unrefuse := make(chan struct{})
	s.unrefuse = unrefuse
	s.serving.Add(1)
	go func() {
		defer s.serving.Done()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-unrefuse:
		case <-s.closing:
			return
		}
		for {
			if s.reopen() {
				return
			}
			select {
			case <-time.After(ReopenInterval):
			case <-s.closing:
				return
			}
		}
	}()
	return nil
}

// reopen listens on the server's address again; false means try later.
func (s *Server) reopen() bool {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	if s.closed {
		return true
	}
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return false
	}
	s.refusing = false
	s.unrefuse = nil
	s.http.SetKeepAlivesEnabled(true)
	s.serve(ln)
	return true
}

// endRefusal ends a refusal under way: the main address listens again
// at once (or as soon as it is free).
func (s *Server) endRefusal() {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	if s.unrefuse != nil {
		close(s.unrefuse)
		s.unrefuse = nil
	}
}

// Refusing reports whether a refuse fault is keeping the main address
// closed.
func (s *Server) Refusing() bool {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	return s.refusing
}

// enter registers a request being handled; false when the server is
// closing (the request is then dropped).
func (s *Server) enter() bool {
	s.lnMu.Lock()
	defer s.lnMu.Unlock()
	if s.closed {
		return false
	}
	s.handlers.Add(1)
	return true
}

// Capabilities returns the current capabilities.
func (s *Server) Capabilities() delivery.Capabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

// SetCapabilities changes the capabilities for the requests that follow.
// Keys already remembered are judged by the new window.
func (s *Server) SetCapabilities(c delivery.Capabilities) error {
	if err := checkCapabilities(c); err != nil {
		return err
	}
	s.mu.Lock()
	s.caps = c
	s.mu.Unlock()
	return nil
}

func checkCapabilities(c delivery.Capabilities) error {
	if c.DedupWindow < 0 || c.SettleDelay < 0 {
		return fmt.Errorf("helpdesk: dedup window and settle delay must not be negative")
	}
	return nil
}

func (s *Server) logf(msg string, args ...any) {
	if s.opts.Log != nil {
		s.opts.Log.Info(msg, args...)
	}
}
