package httpapi

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/mcp"
	"github.com/oncecall/oncecall/internal/protocol"
)

// Paths served.
const (
	CallbackPath  = "/callback"
	FunctionsPath = "/functions"
	MCPPath       = mcp.Path
)

// RequestTimeout bounds one request, as a Lambda timeout would.
const RequestTimeout = 10 * time.Second

// Server adapts a callback.Handler to net/http.
type Server struct {
	h *callback.Handler
	// PublicURL is the base URL that listings name as the callback; "" means
	// http://<Host header>.
	PublicURL string
	// MCP serves POST /mcp over the same handler; New gives it one without
	// a bearer token.
	MCP *mcp.Server
}

// New returns a Server for h.
func New(h *callback.Handler, publicURL string) *Server {
	return &Server{h: h, PublicURL: strings.TrimRight(publicURL, "/"), MCP: mcp.New(h, mcp.Options{})}
}

// ServeHTTP routes POST /callback, GET /functions and POST /mcp.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), RequestTimeout)
	defer cancel()
	switch r.URL.Path {
	case CallbackPath:
		if r.Method != http.MethodPost {
			methodNotAllowed(w, http.MethodPost)
			return
		}
		// Read one byte past the limit so that Decode can say how it was exceeded.
		body, err := io.ReadAll(io.LimitReader(r.Body, protocol.MaxBodyBytes+1))
		if err != nil {
			write(w, protocol.Refuse(&protocol.Problem{Status: http.StatusBadRequest, Code: protocol.CodeInvalidRequest,
				Message: "the request body could not be read"}))
			return
		}
		write(w, s.h.Call(ctx, callback.Request{Nonce: nonce(r.Header), Body: body}))
	case FunctionsPath:
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			methodNotAllowed(w, http.MethodGet)
			return
		}
		base := s.PublicURL
		if base == "" {
			base = "http://" + r.Host
		}
		write(w, s.h.List(ctx, nonce(r.Header), base+CallbackPath))
	case MCPPath:
		// Stateless and JSON only: there is no SSE stream to GET and no
		// session to DELETE.
		if r.Method != http.MethodPost {
			methodNotAllowed(w, http.MethodPost)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, protocol.MaxBodyBytes+1))
		if err != nil {
			writeMCP(w, s.MCP.Unreadable(ctx, "the request body could not be read"))
			return
		}
		writeMCP(w, s.MCP.Handle(ctx, mcp.Request{Body: body, Header: func(name string) string {
			if name == protocol.NonceHeader {
				return nonce(r.Header)
			}
			return r.Header.Get(name)
		}}))
	default:
		write(w, protocol.Refuse(&protocol.Problem{Status: http.StatusNotFound, Code: protocol.CodeNoRoute,
			Message: "oncecall serves POST " + CallbackPath + ", GET " + FunctionsPath + " and POST " + MCPPath}))
	}
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
	write(w, protocol.Refuse(&protocol.Problem{Status: http.StatusMethodNotAllowed, Code: protocol.CodeMethodNotAllowed,
		Message: "use " + allow}))
}

func write(w http.ResponseWriter, a protocol.Answer) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body)
}

// writeMCP writes an MCP door response; one without a body is 202
// Accepted, as Streamable HTTP answers notifications.
func writeMCP(w http.ResponseWriter, res mcp.Response) {
	for k, v := range res.Header {
		w.Header().Set(k, v)
	}
	if res.Body == nil {
		w.WriteHeader(res.Status)
		return
	}
	write(w, protocol.Answer{Status: res.Status, Body: res.Body})
}
