package httpapi

import (
	"context"
	"crypto/subtle"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/canonjson"
	"github.com/oncecall/oncecall/internal/mcp"
	"github.com/oncecall/oncecall/internal/outcome"
	"github.com/oncecall/oncecall/internal/protocol"
)

// Paths served.
const (
	CallbackPath  = "/callback"
	FunctionsPath = "/functions"
	MCPPath       = mcp.Path
)

// RequestTimeout bounds one request, locally and on Lambda (where the
// function's own timeout may end it sooner).
const RequestTimeout = 10 * time.Second

// EdgeHeader is the header the edge in front of the API (CloudFront) adds
// to every request it forwards, carrying Server.OriginToken.
const EdgeHeader = "X-Oncecall-Edge"

// CodeEdgeOnly refuses a request that did not come through the edge.
const CodeEdgeOnly = "edge_only"

// Server routes, limits, times and refuses every request to a
// callback.Handler, whichever transport brought it: net/http locally,
// API Gateway events on Lambda (package apigw adapts them to this). It is
// configured once, by New, and not changed afterwards.
type Server struct {
	h   *callback.Handler
	mcp http.Handler
	o   Options
}

// Options configure a Server.
type Options struct {
	// PublicURL is the base URL that listings name as the callback; ""
	// means the request's own (BaseURL).
	PublicURL string
	// MCP configures the MCP door on POST /mcp, over the same handler.
	MCP mcp.Options
	// OriginToken, when set, must be the value of EdgeHeader: a request
	// without it reached the API around the edge (and its rate limit), and
	// is refused 403 before anything else is done.
	OriginToken string
	// Local is set by the local server (cmd/oncecall), never on Lambda:
	// a web page the operator visits can reach a server on loopback, so
	// every route refuses a request with an Origin (browsers send one on
	// a cross-origin POST, and on any fetch) that is not the server's own,
	// and, when LoopbackHost is set too, a Host that is neither a loopback
	// name nor PublicURL's (a DNS-rebinding page names its own).
	Local, LoopbackHost bool
	// Outcome, when set, serves the application's outcome read on
	// OutcomePath (package outcome), with its own credential.
	Outcome http.Handler
}

// Codes of the local server's refusals.
const (
	CodeHostNotLoopback = "host_not_loopback"
	CodeCrossOrigin     = "cross_origin"
)

// OutcomePath is the application's outcome read.
const OutcomePath = outcome.Path

// New returns the Server of h with o. A nil h serves the outcome read
// alone (its own Lambda function): every other route is 404.
func New(h *callback.Handler, o Options) *Server {
	o.PublicURL = strings.TrimRight(o.PublicURL, "/")
	s := &Server{h: h, o: o}
	if h != nil {
		s.mcp = mcp.New(h, o.MCP)
	}
	return s
}

type baseKey struct{}

// WithBaseURL returns ctx carrying the URL the API is reached at (scheme,
// host and any stage prefix), for an adapter whose requests do not say it
// in their Host.
func WithBaseURL(ctx context.Context, base string) context.Context {
	return context.WithValue(ctx, baseKey{}, base)
}

// BaseURL is the URL the API is reached at, as the request's adapter set
// it (WithBaseURL) or else http://<Host>.
func BaseURL(r *http.Request) string {
	if b, ok := r.Context().Value(baseKey{}).(string); ok {
		return b
	}
	return "http://" + r.Host
}

// ServeHTTP routes POST /callback, GET /functions and POST /mcp.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if s.o.OriginToken != "" && subtle.ConstantTimeCompare([]byte(r.Header.Get(EdgeHeader)), []byte(s.o.OriginToken)) != 1 {
		write(w, protocol.Refuse(&protocol.RequestError{
			Status:  http.StatusForbidden,
			Code:    CodeEdgeOnly,
			Message: "this API is served through its edge only: call the stack's EdgeCallbackUrl and EdgeFunctionSourceUrl",
		}))
		return
	}
	if s.o.Local {
		if msg := s.localRefusal(r); msg != "" {
			code := CodeCrossOrigin
			if strings.HasPrefix(msg, "Host") {
				code = CodeHostNotLoopback
			}
			write(w, protocol.Refuse(&protocol.RequestError{Status: http.StatusForbidden, Code: code, Message: msg}))
			return
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), RequestTimeout)
	defer cancel()
	if s.h == nil && r.URL.Path != OutcomePath {
		// A server of the outcome read alone (its Lambda function).
		notFound(w)
		return
	}
	switch r.URL.Path {
	case CallbackPath:
		if r.Method != http.MethodPost {
			methodNotAllowed(w, http.MethodPost)
			return
		}
		// Read one byte past the limit so that Decode can say how it was exceeded.
		body, err := io.ReadAll(io.LimitReader(r.Body, protocol.MaxBodyBytes+1))
		if err != nil {
			write(w, protocol.Refuse(&protocol.RequestError{
				Status:  http.StatusBadRequest,
				Code:    protocol.CodeInvalidRequest,
				Message: "the request body could not be read: " + err.Error(),
			}))
			return
		}
		write(w, s.h.Call(ctx, callback.Request{Nonce: nonce(r.Header), Body: body}))
	case FunctionsPath:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, http.MethodGet)
			return
		}
		base := s.o.PublicURL
		if base == "" {
			base = BaseURL(r)
		}
		write(w, s.h.List(ctx, nonce(r.Header), base+CallbackPath))
	case OutcomePath:
		if s.o.Outcome == nil {
			notFound(w)
			return
		}
		s.o.Outcome.ServeHTTP(w, r.WithContext(ctx))
	case MCPPath:
		// Stateless and JSON only: there is no SSE stream to GET and no
		// session to DELETE.
		if r.Method != http.MethodPost {
			methodNotAllowed(w, http.MethodPost)
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		s.mcp.ServeHTTP(w, r.WithContext(ctx))
	default:
		notFound(w)
	}
}

func notFound(w http.ResponseWriter) {
	write(w, protocol.Refuse(&protocol.RequestError{
		Status:  http.StatusNotFound,
		Code:    protocol.CodeNoRoute,
		Message: "oncecall serves POST " + CallbackPath + ", GET " + FunctionsPath + " and POST " + MCPPath,
	}))
}

// nonce returns the protocol.NonceHeader header. Several are joined with commas,
// as API Gateway joins them, so that a request carrying two is refused as
// malformed on either transport instead of being judged by whichever one
// comes first.
func nonce(h http.Header) string {
	return strings.Join(h.Values(protocol.NonceHeader), ",")
}

func methodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	write(w, protocol.Refuse(&protocol.RequestError{
		Status:  http.StatusMethodNotAllowed,
		Code:    protocol.CodeMethodNotAllowed,
		Message: "use " + allow,
	}))
}

func write(w http.ResponseWriter, a protocol.Answer) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body())
}

// localRefusal says why the local server refuses r, "" when it does not.
func (s *Server) localRefusal(r *http.Request) string {
	if s.o.LoopbackHost && !loopbackHost(r.Host) && (s.o.PublicURL == "" || !strings.EqualFold(r.Host, hostOf(s.o.PublicURL))) {
		return "Host " + canonjson.Clip(r.Host) + " is not this server's: the local server answers requests to a loopback name (localhost, 127.0.0.1, [::1]) or PUBLIC_URL's host only"
	}
	origin := r.Header.Get("Origin")
	if origin == "" || strings.EqualFold(origin, "http://"+r.Host) {
		return ""
	}
	if r.URL.Path == MCPPath {
		return "" // the MCP door's own allow-list decides (MCP_ALLOWED_ORIGINS)
	}
	return "a request from the web page at Origin " + canonjson.Clip(origin) + " is refused: the local server serves programs, not browsers"
}

// loopbackHost reports whether host (a Host header, port optional) names
// the loopback interface.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostOf is the host[:port] of a URL, "" if it has none.
func hostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}
