package mcp

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/protocol"
)

// Path is where the door is served.
const Path = "/mcp"

// Protocol versions served. The initialize flow negotiates one of
// LegacyVersions; a request carrying MetaProtocolVersion in _meta needs no
// initialize and must name one of MetaVersions.
const (
	Version20250618 = "2025-06-18"
	Version20251125 = "2025-11-25"
	Version20260728 = "2026-07-28"
)

var (
	// LegacyVersions are negotiated by initialize, newest first.
	LegacyVersions = []string{Version20251125, Version20250618}
	// MetaVersions are accepted in _meta without initialize.
	MetaVersions = []string{Version20260728}
)

// Header and _meta names.
const (
	// ProtocolVersionHeader is the MCP-Protocol-Version header.
	ProtocolVersionHeader = "MCP-Protocol-Version"
	// AuthorizationHeader carries the bearer token, when one is configured.
	AuthorizationHeader = "Authorization"
	// MetaProtocolVersion is the per-request protocol version of 2026-07-28.
	MetaProtocolVersion = "io.modelcontextprotocol/protocolVersion"
)

// JSON-RPC error codes answered.
const (
	CodeParseError     = -32700
	CodeInvalidRequest = -32600
	CodeMethodNotFound = -32601
	CodeInvalidParams  = -32602
	// CodeUnsupportedProtocolVersion refuses a _meta protocol version
	// (2026-07-28), with the supported ones in the error's data.
	CodeUnsupportedProtocolVersion = -32022
	// CodeUnauthorized is the server-defined code of the HTTP 401 and 403
	// answers; data.code says which refusal it was.
	CodeUnauthorized = -32001
)

// ServerName is the serverInfo name initialize answers.
const ServerName = "oncecall"

// Request is one POST /mcp as a transport received it.
type Request struct {
	// Body is the raw body; transports read at most one byte past
	// protocol.MaxBodyBytes.
	Body []byte
	// Header returns a request header by name, in any case; "" when absent.
	Header func(name string) string
}

// Response is the HTTP answer. A nil Body means none (202 Accepted).
type Response struct {
	Status int
	Header map[string]string
	Body   []byte
}

// Options configure a Server.
type Options struct {
	// Token, when set, is the bearer token every request must carry in
	// Authorization. Without it, tools/list discloses only schemas and a
	// tools/call still needs the nonce.
	Token string
	// OpenWorld is true when created tickets go on to a destination.
	OpenWorld bool
	// Version is serverInfo.version.
	Version string
}

// Server serves the MCP door for a callback.Handler. It keeps no session;
// it is safe for concurrent use.
type Server struct {
	h        *callback.Handler
	token    [sha256.Size]byte
	hasToken bool
	version  string
	// toolsList is the tools/list result, made on first use: building it
	// (every tool's schemas as JSON) would otherwise cost each cold start
	// of the callback, most of which never lists.
	toolsList func() json.RawMessage
}

// New returns a Server for h.
func New(h *callback.Handler, o Options) *Server {
	s := &Server{h: h, version: o.Version}
	if s.version == "" {
		s.version = "dev"
	}
	if o.Token != "" {
		s.token, s.hasToken = sha256.Sum256([]byte("Bearer "+o.Token)), true
	}
	s.toolsList = sync.OnceValue(func() json.RawMessage { return listTools(h, o.OpenWorld) })
	return s
}

// Door is where an MCP tools/call carries each field of a callback.Call.
var Door = callback.Door{
	Name:      "mcp",
	Nonce:     "params._meta." + MetaNonce + " (or the " + protocol.NonceHeader + " header)",
	User:      "params._meta." + MetaUser,
	RequestID: "params._meta." + protocol.RequestIDKey,
}

// Handle serves one POST /mcp. Every request gets one log line and metric:
// a tools/call that reaches the pipeline gets the call's; any other gets
// one through Note, with its outcome.
func (s *Server) Handle(ctx context.Context, r Request) Response {
	start := s.h.Now()
	res, n := s.handle(ctx, r)
	if n.outcome != "" {
		s.h.Note(ctx, Door, start, n.method, n.outcome, n.code, res.Status)
	}
	return res
}

// Unreadable answers a request whose body the transport could not read
// (an API Gateway body marked base64 that is not): a -32700 parse error
// saying why, recorded as Handle records a refusal.
func (s *Server) Unreadable(ctx context.Context, reason string) Response {
	start := s.h.Now()
	res := rpcError(http.StatusBadRequest, nil, CodeParseError, "parse error: "+reason, nil)
	s.h.Note(ctx, Door, start, "", protocol.StatusRejected, codeParse, res.Status)
	return res
}

// note is what Handle records of a request that ran no call; an empty
// outcome means the pipeline recorded it.
type note struct {
	method, outcome, code string
}

// Outcome codes of refused envelopes, for the log.
const (
	codeToken          = "invalid_token"
	codeParse          = "parse_error"
	codeInvalidRequest = "invalid_request"
	codeUnknownMethod  = "method_not_found"
	codeInvalidParams  = "invalid_params"
	// codeInvalidArguments is the callback's code for arguments that are
	// not acceptable JSON, answered before the pipeline.
	codeInvalidArguments = protocol.CodeInvalidArguments
	codeVersion          = "unsupported_protocol_version"
)

func refused(method, code string) note {
	return note{method: method, outcome: protocol.StatusRejected, code: code}
}

func (s *Server) handle(ctx context.Context, r Request) (Response, note) {
	if res, ok := s.authorize(r); !ok {
		return res, note{outcome: callback.OutcomeUnauthorized, code: codeToken}
	}
	msg, res, code := decode(r.Body)
	if code != "" {
		return res, refused("", code)
	}
	if v := r.Header(ProtocolVersionHeader); v != "" && !supported(v) {
		return rpcError(http.StatusBadRequest, msg.id, CodeInvalidRequest,
			"MCP-Protocol-Version "+clip(v)+" is not supported; use one of "+strings.Join(allVersions(), ", "), nil), refused(msg.method, codeVersion)
	}
	if msg.notification() {
		// Notifications (notifications/initialized, cancelled, ...) and
		// responses need no answer; there is no session to update.
		return Response{Status: http.StatusAccepted}, note{method: msg.method, outcome: callback.OutcomeHandshake}
	}
	if res, ok := checkMetaVersion(msg); !ok {
		return res, refused(msg.method, codeVersion)
	}
	switch msg.method {
	case "initialize":
		res, ok := s.initialize(msg)
		if !ok {
			return res, refused(msg.method, codeInvalidParams)
		}
		return res, note{method: msg.method, outcome: callback.OutcomeHandshake}
	case "ping":
		return result(msg.id, struct{}{}), note{method: msg.method, outcome: callback.OutcomeHandshake}
	case "server/discover":
		return s.discover(msg), note{method: msg.method, outcome: callback.OutcomeHandshake}
	case "tools/list":
		return result(msg.id, s.toolsList()), note{method: msg.method, outcome: callback.OutcomeListed}
	case "tools/call":
		c, problem := toCall(msg)
		if problem != "" {
			return rpcError(http.StatusOK, msg.id, CodeInvalidParams, problem, nil), refused(msg.method, codeInvalidParams)
		}
		if c.Nonce == "" {
			c.Nonce = r.Header(protocol.NonceHeader)
		}
		return toResult(msg.id, s.h.Serve(ctx, c)), note{}
	}
	return rpcError(http.StatusOK, msg.id, CodeMethodNotFound,
		"method "+clip(msg.method)+" is not served; oncecall serves initialize, ping, tools/list and tools/call", nil), refused(msg.method, codeUnknownMethod)
}

// authorize checks the bearer token, when one is configured, before
// anything of the body is read.
func (s *Server) authorize(r Request) (Response, bool) {
	if !s.hasToken {
		return Response{}, true
	}
	got := r.Header(AuthorizationHeader)
	sum := sha256.Sum256([]byte(got))
	if subtle.ConstantTimeCompare(sum[:], s.token[:]) == 1 {
		return Response{}, true
	}
	msg := "the Authorization header does not carry this server's bearer token; set the MCP source's headers to {\"Authorization\": \"Bearer <token>\"}"
	if got == "" {
		msg = "the Authorization header is required: set the MCP source's headers to {\"Authorization\": \"Bearer <token>\"}"
	}
	res := rpcError(http.StatusUnauthorized, nil, CodeUnauthorized, msg, map[string]string{"code": "invalid_token"})
	res.Header = map[string]string{"WWW-Authenticate": `Bearer realm="oncecall"`}
	return res, false
}

func supported(v string) bool {
	return slices.Contains(LegacyVersions, v) || slices.Contains(MetaVersions, v)
}

func allVersions() []string { return append(slices.Clone(MetaVersions), LegacyVersions...) }

// checkMetaVersion refuses a 2026-07-28 style request whose _meta names a
// version not served, as the 2026-07-28 revision says: the versions
// served in data.
func checkMetaVersion(m *message) (Response, bool) {
	v, present := m.meta[MetaProtocolVersion]
	if !present || v == nil {
		return Response{}, true
	}
	s, ok := v.(string)
	if !ok {
		return rpcError(http.StatusBadRequest, m.id, CodeInvalidParams, "params._meta."+MetaProtocolVersion+" must be a string", nil), false
	}
	if slices.Contains(MetaVersions, s) {
		return Response{}, true
	}
	return rpcError(http.StatusBadRequest, m.id, CodeUnsupportedProtocolVersion, "protocol version "+clip(s)+" is not supported; send "+
		strings.Join(MetaVersions, " or ")+", or initialize with "+strings.Join(LegacyVersions, " or "),
		map[string]any{"supported": MetaVersions, "requested": s}), false
}

type implementation struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type capabilities struct {
	Tools struct {
		ListChanged bool `json:"listChanged"`
	} `json:"tools"`
}

// instructions is what initialize tells the host about using the tools.
const instructions = "create_ticket creates one helpdesk ticket per operation: the application must put the operation's request_id in params._meta.request_id and keep it across retries; a retry with the same request_id returns the same ticket with deduplicated true. get_ticket reads a ticket by the ticket_id create_ticket returned."

// initialize answers the handshake; ok is false when it refused params.
func (s *Server) initialize(m *message) (Response, bool) {
	v, _ := m.params["protocolVersion"].(string)
	if v == "" {
		return rpcError(http.StatusOK, m.id, CodeInvalidParams, "initialize needs params.protocolVersion, a string such as "+Version20251125, nil), false
	}
	if !slices.Contains(LegacyVersions, v) {
		// The client decides whether it can speak the version offered.
		v = LegacyVersions[0]
	}
	return result(m.id, struct {
		ProtocolVersion string         `json:"protocolVersion"`
		Capabilities    capabilities   `json:"capabilities"`
		ServerInfo      implementation `json:"serverInfo"`
		Instructions    string         `json:"instructions"`
	}{v, capabilities{}, implementation{ServerName, s.version}, instructions}), true
}

// discover answers 2026-07-28's server/discover, so clients of that
// revision need no initialize.
func (s *Server) discover(m *message) Response {
	return result(m.id, struct {
		Meta              map[string]any `json:"_meta"`
		SupportedVersions []string       `json:"supportedVersions"`
		Capabilities      capabilities   `json:"capabilities"`
		Instructions      string         `json:"instructions"`
	}{map[string]any{"io.modelcontextprotocol/serverInfo": implementation{ServerName, s.version}}, allVersions(), capabilities{}, instructions})
}

// clip shortens a value echoed in an error.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return "\"" + strings.ToValidUTF8(s, "") + "\""
	}
	return "\"" + strings.ToValidUTF8(s[:max], "") + "…\""
}
