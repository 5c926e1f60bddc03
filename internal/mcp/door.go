package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/canonjson"
	"github.com/oncecall/oncecall/internal/protocol"
)

// Path is where the door is served.
const Path = "/mcp"

// Protocol versions served, newest first. A client that initializes with
// an older one (2025-03-26) is answered with Version20251125, the newest
// the initialize flow negotiates; 2026-07-28 needs no initialize.
const (
	Version20250618 = "2025-06-18"
	Version20251125 = "2025-11-25"
	Version20260728 = "2026-07-28"
)

// Versions are the protocol versions served, newest first.
var Versions = []string{Version20260728, Version20251125, Version20250618}

// Header names this door reads itself.
const (
	// AuthorizationHeader carries the bearer token, when one is configured.
	AuthorizationHeader = "Authorization"
	// OriginHeader is checked against Options.AllowedOrigins.
	OriginHeader = "Origin"
)

// JSON-RPC error codes this door answers itself; the SDK answers the
// protocol's own (jsonrpc.CodeParseError, CodeInvalidParams, ...).
const (
	// CodeUnauthorized is the server-defined code of a refused bearer
	// token, nonce or user; data.code says which refusal it was.
	CodeUnauthorized = -32001
	// CodeForbiddenOrigin refuses a request whose Origin is not allowed.
	CodeForbiddenOrigin = -32003
)

// ServerName is the serverInfo name the door announces.
const ServerName = "oncecall"

// Options configure a Handler.
type Options struct {
	// Token, when set, is the bearer token every request must carry in
	// Authorization. Without it, tools/list discloses only schemas and a
	// tools/call still needs the nonce.
	Token string
	// AllowedOrigins are the browser origins (scheme://host[:port]) whose
	// requests are served; a request with any other Origin header is
	// refused 403. None by default: only clients that send no Origin
	// (servers, command-line clients, AIVAX) are served.
	AllowedOrigins []string
	// OpenWorld is true when created tickets go on to a destination.
	OpenWorld bool
	// Version is serverInfo.version.
	Version string
}

// Handler serves the MCP door for a callback.Handler: an http.Handler for
// POST /mcp. It keeps no session; it is safe for concurrent use.
type Handler struct {
	h        *callback.Handler
	token    [sha256.Size]byte
	hasToken bool
	origins  map[string]bool
	// sdk is the SDK's handler, made on first use: building the tools'
	// schemas would otherwise cost every cold start of the callback, most
	// of which never serve /mcp.
	sdk func() http.Handler
}

// New returns a Handler for h.
func New(h *callback.Handler, o Options) *Handler {
	d := &Handler{h: h, origins: map[string]bool{}}
	if o.Token != "" {
		d.token, d.hasToken = sha256.Sum256([]byte("Bearer "+o.Token)), true
	}
	for _, origin := range o.AllowedOrigins {
		d.origins[strings.ToLower(strings.TrimRight(origin, "/"))] = true
	}
	d.sdk = sync.OnceValue(func() http.Handler { return d.newSDK(o) })
	return d
}

// Door is where an MCP tools/call carries each field of a callback.Call.
var Door = callback.Door{
	Name:      "mcp",
	Nonce:     "params._meta." + MetaNonce + " (or the " + protocol.NonceHeader + " header)",
	User:      "params._meta." + MetaUser,
	RequestID: "params._meta." + protocol.RequestIDKey,
}

// exchange is one request on its way through the SDK: what the tools/call
// handler needs of the HTTP request, and what it tells ServeHTTP back.
type exchange struct {
	// ctx is the HTTP request's context. The SDK hands its handlers a
	// context with the request's values but not its deadline or
	// cancellation (it detaches it), so the request's own context crosses
	// the SDK here, the one context a struct of oncecall holds: an
	// exchange lives exactly as long as its request, as an http.Request
	// does. The pipeline runs under it, as through the callback.
	ctx context.Context
	// nonce is the X-Request-Nonce header, for hosts that send it there.
	nonce string
	// served is set once the pipeline has recorded the call.
	served atomic.Bool
	// refused is the code of a tools/call the handler refused before the
	// pipeline, answering with a result.
	refused atomic.Value
}

type exchangeKey struct{}

func exchangeFrom(ctx context.Context) *exchange {
	x, _ := ctx.Value(exchangeKey{}).(*exchange)
	if x == nil {
		x = &exchange{ctx: ctx}
	}
	return x
}

// Outcome codes of requests refused before the pipeline, for the log.
const (
	codeToken         = "invalid_token"
	codeOrigin        = "origin_not_allowed"
	codeParse         = "parse_error"
	codeInvalid       = "invalid_request"
	codeUnknownMethod = "method_not_found"
	codeInvalidParams = "invalid_params"
	codeVersion       = "unsupported_protocol_version"
	codeHeader        = "header_mismatch"
	codeCapabilities  = "missing_client_capabilities"
	codeMediaType     = "unsupported_media_type"
	codeTooLarge      = protocol.CodeTooLarge
	codeHost          = "invalid_host"
	codeMethod        = protocol.CodeMethodNotAllowed
)

// SDK error codes of the 2026-07-28 revision, as the SDK names them.
const (
	rpcHeaderMismatch = -32020
	rpcCapabilities   = -32021
	rpcVersion        = -32022
)

// ServeHTTP serves one request to /mcp. Every request gets one log line
// and metric: a tools/call that reaches the pipeline gets the call's; any
// other gets one through callback.Handler.Note, naming the method only
// when it is one MCP defines.
func (d *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	note := callback.Note{Door: Door, Start: d.h.Now()}
	if !d.authorized(r) {
		d.refuseToken(w, r)
		note.Outcome, note.Code, note.Status = callback.OutcomeUnauthorized, codeToken, http.StatusUnauthorized
		d.h.Note(r.Context(), note)
		return
	}
	if origin := r.Header.Get(OriginHeader); origin != "" && !d.origins[strings.ToLower(origin)] {
		writeError(w, http.StatusForbidden, &jsonrpc.Error{Code: CodeForbiddenOrigin, Message: "Origin " + clip(origin) + " may not call this server: browsers' requests are refused unless their origin is in MCP_ALLOWED_ORIGINS"})
		note.Outcome, note.Code, note.Status = protocol.StatusRejected, codeOrigin, http.StatusForbidden
		d.h.Note(r.Context(), note)
		return
	}
	// Read one byte past the limit: the SDK, reading what is left, answers
	// 413 for a longer body.
	body, err := io.ReadAll(io.LimitReader(r.Body, protocol.MaxBodyBytes+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, &jsonrpc.Error{Code: jsonrpc.CodeParseError, Message: "parse error: the request body could not be read: " + clip(err.Error())})
		note.Outcome, note.Code, note.Status = protocol.StatusRejected, codeParse, http.StatusBadRequest
		d.h.Note(r.Context(), note)
		return
	}
	var method string
	var root map[string]any
	if len(body) <= protocol.MaxBodyBytes {
		var code int64
		var msg string
		root, code, msg = strict(body)
		if msg != "" {
			writeError(w, http.StatusBadRequest, &jsonrpc.Error{Code: code, Message: msg})
			note.Method, note.Outcome, note.Code, note.Status = logMethod(root), protocol.StatusRejected, rpcCode(int(code)), http.StatusBadRequest
			d.h.Note(r.Context(), note)
			return
		}
		method = logMethod(root)
	}
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))

	x := &exchange{ctx: r.Context(), nonce: strings.Join(r.Header.Values(protocol.NonceHeader), ",")}
	rw := &recorder{ResponseWriter: w, x: x}
	d.sdk().ServeHTTP(rw, r.WithContext(context.WithValue(r.Context(), exchangeKey{}, x)))
	rw.finish(answerID(root))
	if x.served.Load() {
		return
	}
	note.Method = method
	note.Outcome, note.Code = rw.outcome(method)
	if c, _ := x.refused.Load().(string); c != "" {
		note.Outcome, note.Code = protocol.StatusRejected, c
	}
	note.Status = rw.status()
	d.h.Note(r.Context(), note)
}

// authorized checks the bearer token, when one is configured, in constant
// time.
func (d *Handler) authorized(r *http.Request) bool {
	if !d.hasToken {
		return true
	}
	sum := sha256.Sum256([]byte(r.Header.Get(AuthorizationHeader)))
	return subtle.ConstantTimeCompare(sum[:], d.token[:]) == 1
}

// refuseToken answers a missing or wrong bearer token: 401 with the
// WWW-Authenticate header RFC 9110 requires of every 401.
func (d *Handler) refuseToken(w http.ResponseWriter, r *http.Request) {
	msg := "the Authorization header does not carry this server's bearer token; set the MCP source's headers to {\"Authorization\": \"Bearer <token>\"}"
	if r.Header.Get(AuthorizationHeader) == "" {
		msg = "the Authorization header is required: set the MCP source's headers to {\"Authorization\": \"Bearer <token>\"}"
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="oncecall", error="invalid_token"`)
	data, _ := json.Marshal(map[string]string{"code": codeToken})
	writeError(w, http.StatusUnauthorized, &jsonrpc.Error{Code: CodeUnauthorized, Message: msg, Data: data})
}

// strict parses the body as the callback parses its own: duplicate member
// names, invalid UTF-8, nesting past protocol.MaxDepth, strings past
// protocol.MaxStringBytes and more than MaxValues values are refused here,
// because the SDK's decoder would keep the last duplicate (a second
// _meta.request_id or nonce) or replace bad bytes (a user id) silently.
// params.arguments alone is kept as sent (checked as JSON syntax): the
// tools/call handler parses it under the same rules and answers a problem
// there as a tool result the model can correct, while everything around
// it is held to every rule whatever the arguments hold. Two shapes the SDK
// would serve are refused too: a batch, which only 2025-03-26 (not served)
// allows and the SDK accepts from a client that names no version, and an
// id that is neither a string nor an integer, which the SDK would answer
// under another id (1.5 as 1). code is the JSON-RPC error of a refusal,
// msg says what is wrong; root is the parsed body.
func strict(body []byte) (root map[string]any, code int64, msg string) {
	doc, err := canonjson.Parse(body, envelopeLimits)
	if err != nil {
		return nil, jsonrpc.CodeParseError, "parse error: " + clipPath(err.Error())
	}
	switch v := doc.(type) {
	case []any:
		return nil, jsonrpc.CodeInvalidRequest, "JSON-RPC batches are not accepted; send one request per POST"
	case map[string]any:
		if id, ok := v["id"]; ok && !validID(id) {
			return v, jsonrpc.CodeInvalidRequest, "id must be a string or an integer"
		}
		return v, 0, ""
	}
	return nil, 0, ""
}

// validID reports whether id, as canonjson parses it, is a JSON-RPC id
// MCP accepts: a string or an integer, never null.
func validID(id any) bool {
	switch x := id.(type) {
	case string:
		return true
	case float64:
		return x == float64(int64(x))
	}
	return false
}

// MaxValues bounds the values (objects, arrays, strings, numbers,
// literals) of a /mcp body outside params.arguments, and those of the
// arguments on their own: what an unauthenticated request costs the door
// and the SDK's decoder grows with this count, not with the body's size
// alone. A tools/call of AIVAX's has a few dozen.
const MaxValues = 512

// limits are the callback's limits on any JSON it reads, and MaxValues.
var limits = canonjson.Limits{
	MaxDepth:        protocol.MaxDepth,
	MaxStringBytes:  protocol.MaxStringBytes,
	MaxNumberLength: protocol.MaxNumberLength,
	MaxValues:       MaxValues,
}

// envelopeLimits are limits for the whole body, params.arguments kept as
// sent for the tools/call handler.
var envelopeLimits = func() canonjson.Limits {
	l := limits
	l.Raw = []string{"params", "arguments"}
	return l
}()

// Methods are the JSON-RPC methods a log line names; any other method is
// logged as UnknownMethod, never as sent.
var Methods = []string{
	"initialize", "ping", "server/discover", "tools/list", "tools/call",
	"notifications/initialized", "notifications/cancelled", "notifications/progress",
	"notifications/roots/list_changed", "resources/list", "resources/templates/list",
	"resources/read", "prompts/list", "prompts/get", "completion/complete", "logging/setLevel",
	"subscriptions/listen",
}

// UnknownMethod is logged in place of a method not in Methods.
const UnknownMethod = "(unknown)"

func logMethod(root map[string]any) string {
	m, ok := root["method"].(string)
	switch {
	case !ok:
		return ""
	case slices.Contains(Methods, m):
		return m
	}
	return UnknownMethod
}

// recorder keeps the SDK's answer (one JSON body, or a plain-text
// refusal: the handler answers in JSON, never a stream) until finish
// writes it, so that every answer leaves the door bounded and clipped.
type recorder struct {
	http.ResponseWriter
	x    *exchange
	code int
	body []byte
}

func (rw *recorder) WriteHeader(code int) {
	if rw.code == 0 {
		rw.code = code
	}
}

func (rw *recorder) Write(b []byte) (int, error) {
	if rw.code == 0 {
		rw.code = http.StatusOK
	}
	rw.body = append(rw.body, b...)
	return len(b), nil
}

// Flush does nothing: the answer is written whole by finish.
func (rw *recorder) Flush() {}

func (rw *recorder) status() int {
	if rw.code == 0 {
		return http.StatusOK
	}
	return rw.code
}

// finish writes the SDK's answer, a refusal made to keep SECURITY.md's
// promises: a JSON-RPC error's message tidied (see tidy) and the answer
// under MaxRefusalBytes; a plain-text refusal of the dispatcher (an
// unknown method, an id where none belongs) to a request with an id
// answered as the JSON-RPC error it is, with that id; any other plain
// text tidied. id is the request's id as JSON, nil without one.
func (rw *recorder) finish(id json.RawMessage) {
	w, status := rw.ResponseWriter, rw.status()
	var e struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}
	plain := strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain")
	switch {
	case !plain && json.Unmarshal(rw.body, &e) == nil && e.Error != nil:
		if msg := tidy(e.Error.Message); msg != e.Error.Message || len(rw.body) > MaxRefusalBytes {
			e.Error.Message = msg
			if b, _ := json.Marshal(e); len(b) > MaxRefusalBytes {
				e.Error.Data = nil
			}
			rw.body, _ = json.Marshal(e)
		}
	case plain && status == http.StatusBadRequest && id != nil && dispatcherCode(rw.body) != 0:
		b, _ := json.Marshal(struct {
			JSONRPC string          `json:"jsonrpc"`
			ID      json.RawMessage `json:"id"`
			Error   *jsonrpc.Error  `json:"error"`
		}{"2.0", id, &jsonrpc.Error{Code: dispatcherCode(rw.body), Message: tidy(strings.TrimSpace(string(rw.body)))}})
		w.Header().Set("Content-Type", "application/json")
		w.Header().Del("X-Content-Type-Options")
		rw.body = b
	case plain:
		rw.body = []byte(tidy(strings.TrimSpace(string(rw.body))) + "\n")
	}
	w.Header().Del("Content-Length")
	w.WriteHeader(status)
	_, _ = w.Write(rw.body)
}

// MaxRefusalBytes bounds every refusal the door sends.
const MaxRefusalBytes = 1024

// The SDK's dispatcher refuses these in plain text, before any handler.
const (
	sdkNotHandled     = "JSON RPC not handled"
	sdkInvalidRequest = "invalid request: "
)

// dispatcherCode is the JSON-RPC code of a plain-text refusal of the
// SDK's dispatcher, 0 for any other text.
func dispatcherCode(text []byte) int64 {
	switch {
	case bytes.HasPrefix(text, []byte(sdkNotHandled)):
		return jsonrpc.CodeMethodNotFound
	case bytes.HasPrefix(text, []byte(sdkInvalidRequest)):
		return jsonrpc.CodeInvalidRequest
	}
	return 0
}

// answerID is the id of the request root, as JSON, or nil.
func answerID(root map[string]any) json.RawMessage {
	id, ok := root["id"]
	if !ok || !validID(id) {
		return nil
	}
	if f, ok := id.(float64); ok {
		return json.RawMessage(strconv.FormatInt(int64(f), 10))
	}
	b, _ := json.Marshal(id)
	return b
}

// sdkEcho is where the SDK quotes the params it could not decode, whole.
const sdkEcho = "unmarshaling "

// quoted is a Go-quoted string in a message of the SDK's.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// nonceLike is a BCrypt hash, or the start of one.
var nonceLike = regexp.MustCompile(`\$2[abxy]?\$[0-9]{2}\$[./A-Za-z0-9]*`)

// tidy shortens a message the SDK wrote: the params it echoes whole
// (nonce included) are left out, every quoted value is clipped to 64
// bytes, anything shaped as a nonce is removed, and the whole is clipped
// as a parse error is (clipPath).
func tidy(msg string) string {
	if i := strings.Index(msg, sdkEcho+`"`); i >= 0 {
		if q, err := strconv.QuotedPrefix(msg[i+len(sdkEcho):]); err == nil {
			msg = msg[:i] + sdkEcho + "params" + msg[i+len(sdkEcho)+len(q):]
		}
	}
	msg = quoted.ReplaceAllStringFunc(msg, func(q string) string {
		if len(q) <= 66 {
			return q
		}
		return clip(q[1 : len(q)-1])
	})
	msg = nonceLike.ReplaceAllString(msg, "(nonce)")
	return clipPath(msg)
}

// outcome reads the recorded answer of a request that ran no call.
func (rw *recorder) outcome(method string) (outcome, code string) {
	var res struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	isRPC := json.Unmarshal(rw.body, &res) == nil
	switch st := rw.status(); {
	case st == http.StatusAccepted:
		return callback.OutcomeHandshake, ""
	case isRPC && res.Error != nil:
		return protocol.StatusRejected, rpcCode(res.Error.Code)
	case isRPC && res.Result != nil && st == http.StatusOK:
		if method == "tools/list" {
			return callback.OutcomeListed, ""
		}
		return callback.OutcomeHandshake, ""
	default:
		return protocol.StatusRejected, statusCode(st)
	}
}

func rpcCode(code int) string {
	switch code {
	case jsonrpc.CodeParseError:
		return codeParse
	case jsonrpc.CodeMethodNotFound:
		return codeUnknownMethod
	case jsonrpc.CodeInvalidParams:
		return codeInvalidParams
	case rpcVersion:
		return codeVersion
	case rpcHeaderMismatch:
		return codeHeader
	case rpcCapabilities:
		return codeCapabilities
	}
	return codeInvalid
}

// statusCode names a refusal the SDK answered in plain text.
func statusCode(status int) string {
	switch status {
	case http.StatusUnsupportedMediaType:
		return codeMediaType
	case http.StatusRequestEntityTooLarge:
		return codeTooLarge
	case http.StatusForbidden:
		return codeHost
	case http.StatusMethodNotAllowed:
		return codeMethod
	}
	return codeInvalid
}

// writeError writes the JSON-RPC error e with HTTP status, answering a
// request whose id is not known yet (null).
func writeError(w http.ResponseWriter, status int, e *jsonrpc.Error) {
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", json.RawMessage("null"), e})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// clip shortens a value echoed in an error.
func clip(s string) string {
	const max = 64
	if len(s) <= max {
		return "\"" + strings.ToValidUTF8(s, "") + "\""
	}
	return "\"" + strings.ToValidUTF8(s[:max], "") + "…\""
}

// clipPath shortens what a parse error quotes: a hostile member name of
// many kilobytes is not echoed back.
func clipPath(s string) string {
	const max = 240
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}
