package outcome

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oncecall/oncecall/internal/idempotency"
	"github.com/oncecall/oncecall/internal/protocol"
)

// Path is the route of the outcome read: GET /outcome?user=U&request_id=R.
const Path = "/outcome"

// Query parameters of the read.
const (
	ParamUser      = "user"
	ParamRequestID = "request_id"
)

// Codes of the read's refusals.
const (
	CodeMissingKey = "missing_outcome_key"
	CodeInvalidKey = "invalid_outcome_key"
	CodeBadQuery   = "invalid_query"
)

// Deadline bounds one read, store retries included.
const Deadline = 5 * time.Second

// Handler serves GET /outcome over a Reader. It is safe for concurrent
// use.
type Handler struct {
	Reader Reader
	// Key, when set, is the credential every request must carry as
	// "Authorization: Bearer <Key>": the local server's. On AWS it is
	// empty and the route's IAM authorization (AWS_IAM) is the
	// credential: API Gateway refuses an unsigned request before it
	// reaches the function.
	Key    string
	Logger *slog.Logger
}

// ServeHTTP answers one read, and logs one line: the outcome, the status
// and the duration, never the user, the request id or a result.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	status, outcome, code := h.serve(w, r)
	if h.Logger == nil {
		return
	}
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	attrs := []slog.Attr{
		slog.String("outcome", outcome),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(time.Since(start).Microseconds())/1000),
	}
	if code != "" {
		attrs = append(attrs, slog.String("code", code))
	}
	h.Logger.LogAttrs(r.Context(), level, "outcome", attrs...)
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) (status int, outcome, code string) {
	refuse := func(a protocol.Answer, outcome, code string) (int, string, string) {
		write(w, a)
		return a.Status, outcome, code
	}
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		return refuse(protocol.Refuse(&protocol.RequestError{Status: http.StatusMethodNotAllowed, Code: protocol.CodeMethodNotAllowed, Message: "use GET"}),
			protocol.StatusRejected, protocol.CodeMethodNotAllowed)
	}
	if h.Key != "" {
		auth := r.Header.Values("Authorization")
		if len(auth) == 0 {
			return refuse(protocol.Unauthorized(CodeMissingKey, "GET "+Path+" needs the outcome key: Authorization: Bearer <key> (make run logs it)"),
				protocol.StatusUnauthorized, CodeMissingKey)
		}
		token, ok := strings.CutPrefix(auth[0], "Bearer ")
		if len(auth) != 1 || !ok || subtle.ConstantTimeCompare([]byte(token), []byte(h.Key)) != 1 {
			return refuse(protocol.Forbidden(CodeInvalidKey, "the Authorization header does not carry the outcome key (it is not the hook key, nor the MCP token)"),
				protocol.StatusForbidden, CodeInvalidKey)
		}
	}
	user, rid, err := query(r.URL.RawQuery)
	if err != nil {
		return refuse(protocol.Refuse(&protocol.RequestError{Status: http.StatusBadRequest, Code: CodeBadQuery, Message: err.Error()}),
			protocol.StatusRejected, CodeBadQuery)
	}
	ctx, cancel := context.WithTimeout(r.Context(), Deadline)
	defer cancel()
	v, err := h.Reader.Read(ctx, user, rid)
	switch {
	case errors.Is(err, idempotency.ErrBusy):
		return refuse(protocol.Busy(), protocol.StatusBusy, "")
	case err != nil:
		return refuse(protocol.Internal(), protocol.StatusError, "")
	}
	write(w, protocol.Value(v.Status, v))
	return http.StatusOK, v.Status, ""
}

// query reads the user and the request id, each given once and checked as
// the doors check them.
func query(raw string) (user, requestID string, err error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return "", "", errors.New("the query string is malformed: " + clip(err.Error()))
	}
	for name := range q {
		if name != ParamUser && name != ParamRequestID {
			return "", "", errors.New("unknown query parameter; give only " + ParamUser + " and " + ParamRequestID)
		}
	}
	for _, name := range []string{ParamUser, ParamRequestID} {
		if len(q[name]) != 1 || q[name][0] == "" {
			return "", "", errors.New(name + " must be given once: GET " + Path + "?" + ParamUser + "=<externalUserId>&" + ParamRequestID + "=<request_id>")
		}
	}
	user, requestID = q.Get(ParamUser), q.Get(ParamRequestID)
	if len(user) > protocol.MaxUserIDBytes || !utf8.ValidString(user) {
		return "", "", fmt.Errorf("%s must be UTF-8 text of at most %d bytes: the externalUserId your application sends", ParamUser, protocol.MaxUserIDBytes)
	}
	if err := protocol.CheckRequestID(requestID, ParamRequestID); err != nil {
		var re *protocol.RequestError
		if errors.As(err, &re) {
			return "", "", errors.New(re.Message)
		}
		return "", "", err
	}
	return user, requestID, nil
}

// clip keeps a parse error from quoting much of the request.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

func write(w http.ResponseWriter, a protocol.Answer) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(a.Status)
	_, _ = w.Write(a.Body())
}
