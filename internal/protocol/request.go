package protocol

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/oncecall/oncecall/internal/canonjson"
)

// TypeToolCall is the only value of the body's "type" field; older payloads
// omit the field.
const TypeToolCall = "tool_call"

// NonceHeader is the header AIVAX authenticates every request with: a
// BCrypt hash of the hook key. Transports read it by this name (HTTP header
// names are case-insensitive).
const NonceHeader = "X-Request-Nonce"

// RequestIDKey is the metadata entry that carries the application's
// operation id.
const RequestIDKey = "request_id"

// Request is a decoded callback body.
type Request struct {
	// Function is function.name.
	Function string
	// Arguments is function.content, the model-generated arguments.
	Arguments map[string]any
	// ExternalUserID is context.externalUserId; "" when absent or null.
	ExternalUserID string
	// Metadata is context.metadata; never nil.
	Metadata map[string]string
	// CallSource is context.callSource; unknown values are kept as sent.
	CallSource string
	// ConversationToken is context.conversationToken. It correlates a whole
	// conversation and is never part of an operation key.
	ConversationToken string
	// Moment is context.moment, in UTC; zero when absent.
	Moment time.Time
}

// RequestError is a request refused: the HTTP status, a stable code and a
// message that says what to fix. Decode's and CheckRequestID's errors are
// *RequestError values (errors.As finds them); Refuse answers one.
type RequestError struct {
	Status  int
	Code    string
	Message string
}

func (p *RequestError) Error() string { return p.Code + ": " + p.Message }

// Codes of problems found while decoding.
const (
	CodeInvalidRequest   = "invalid_request"
	CodeInvalidArguments = "invalid_arguments"
	CodeTooLarge         = "too_large"
	// CodeMissingRequestID and CodeInvalidRequestID are RequestID's.
	CodeMissingRequestID = "missing_request_id"
	CodeInvalidRequestID = "invalid_request_id"
)

func envelope(format string, args ...any) *RequestError {
	return &RequestError{Status: http.StatusBadRequest, Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
}

func arguments(format string, args ...any) *RequestError {
	return &RequestError{Status: http.StatusOK, Code: CodeInvalidArguments, Message: fmt.Sprintf(format, args...)}
}

const contentPath = "function.content"

// Decode parses and checks a callback body. The error of a body it
// refuses is a *RequestError; it is nil, as an error, for a body it
// accepts.
func Decode(body []byte) (*Request, error) {
	if len(body) > MaxBodyBytes {
		// Transports read at most one byte past the limit, so the true size
		// is unknown here: say only that it is over.
		return nil, &RequestError{
			Status:  http.StatusOK,
			Code:    CodeTooLarge,
			Message: fmt.Sprintf("the request body is longer than the limit of %d bytes. Send shorter arguments.", MaxBodyBytes),
		}
	}
	doc, err := canonjson.Parse(body, canonjson.Limits{
		MaxDepth:        MaxDepth,
		MaxStringBytes:  MaxStringBytes,
		MaxNumberLength: MaxNumberLength,
	})
	if err != nil {
		var se *canonjson.Error
		if errors.As(err, &se) && (se.Path == contentPath || strings.HasPrefix(se.Path, contentPath+".") || strings.HasPrefix(se.Path, contentPath+"[")) {
			if errors.Is(err, canonjson.ErrTooLong) {
				return nil, &RequestError{
					Status:  http.StatusOK,
					Code:    CodeTooLarge,
					Message: fmt.Sprintf("a string in %s is longer than %d bytes, the limit for any string. Shorten it and call again.", clipMiddle(se.Path), MaxStringBytes),
				}
			}
			return nil, arguments("the arguments are not valid: %s. Send function arguments as one JSON object with unique member names.", clipMiddle(se.Error()))
		}
		return nil, envelope("the body is not acceptable JSON: %s", clipMiddle(err.Error()))
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, envelope("the body must be a JSON object with \"function\" and \"context\"")
	}
	req := &Request{Metadata: map[string]string{}}

	switch t := root["type"].(type) {
	case nil:
		if _, present := root["type"]; present {
			return nil, envelope("type must be %q or absent, not null", TypeToolCall)
		}
	case string:
		if t != TypeToolCall {
			return nil, envelope("type %q is not supported; only %q", canonjson.Clip(t), TypeToolCall)
		}
	default:
		return nil, envelope("type must be the string %q", TypeToolCall)
	}

	fn, ok := root["function"].(map[string]any)
	if !ok {
		return nil, envelope("function must be an object with name and content")
	}
	name, ok := fn["name"].(string)
	if !ok || name == "" {
		return nil, envelope("function.name must be a non-empty string")
	}
	if len(name) > MaxFunctionNameBytes {
		return nil, envelope("function.name is longer than %d bytes", MaxFunctionNameBytes)
	}
	req.Function = name
	switch c := fn["content"].(type) {
	case map[string]any:
		req.Arguments = c
	case nil:
		if _, present := fn["content"]; present {
			return nil, arguments("function.content is null; send the arguments as a JSON object, {} when there are none")
		}
		req.Arguments = map[string]any{}
	default:
		return nil, arguments("function.content must be a JSON object of named arguments, not %s", canonjson.Kind(c))
	}

	ctx, p := object(root, "context")
	if p != nil {
		return nil, p
	}
	if req.ExternalUserID, p = optString(ctx, "externalUserId", "context.externalUserId", MaxUserIDBytes); p != nil {
		return nil, p
	}
	if req.CallSource, p = optString(ctx, "callSource", "context.callSource", MaxTokenBytes); p != nil {
		return nil, p
	}
	if req.ConversationToken, p = optString(ctx, "conversationToken", "context.conversationToken", MaxTokenBytes); p != nil {
		return nil, p
	}
	moment, p := optString(ctx, "moment", "context.moment", MaxTokenBytes)
	if p != nil {
		return nil, p
	}
	if moment != "" {
		if req.Moment, err = parseMoment(moment); err != nil {
			return nil, envelope("context.moment %q is not an ISO 8601 date-time", canonjson.Clip(moment))
		}
	}
	md, p := object(ctx, "metadata")
	if p != nil {
		return nil, envelope("context.metadata must be an object of strings")
	}
	if len(md) > MaxMetadataEntries {
		return nil, envelope("context.metadata has %d entries; the limit is %d", len(md), MaxMetadataEntries)
	}
	for k, v := range md {
		s, ok := v.(string)
		if !ok {
			return nil, envelope("context.metadata.%s must be a string, not %s", canonjson.Clip(k), canonjson.Kind(v))
		}
		if len(s) > MaxMetadataValueBytes {
			return nil, envelope("context.metadata.%s is longer than %d bytes", canonjson.Clip(k), MaxMetadataValueBytes)
		}
		req.Metadata[k] = s
	}
	return req, nil
}

// object returns m[name] as an object; absent or null is an empty object.
func object(m map[string]any, name string) (map[string]any, *RequestError) {
	switch v := m[name].(type) {
	case map[string]any:
		return v, nil
	case nil:
		return map[string]any{}, nil
	default:
		return nil, envelope("%s must be an object, not %s", name, canonjson.Kind(v))
	}
}

// optString returns m[name] as a string; absent or null is "".
func optString(m map[string]any, name, path string, limit int) (string, *RequestError) {
	switch v := m[name].(type) {
	case nil:
		return "", nil
	case string:
		if len(v) > limit {
			return "", envelope("%s is longer than %d bytes", path, limit)
		}
		return v, nil
	default:
		return "", envelope("%s must be a string or null, not %s", path, canonjson.Kind(v))
	}
}

// parseMoment reads context.moment: RFC 3339 with any fractional precision,
// or, as older payloads sent it, the same without an offset (taken as UTC).
func parseMoment(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC(), nil
	}
	return time.ParseInLocation("2006-01-02T15:04:05.999999999", s, time.UTC)
}

// maxEchoBytes bounds how much of a parse error, which quotes member names
// and their path, is repeated to the caller.
const maxEchoBytes = 240

// clipMiddle shortens s to about maxEchoBytes by cutting out its middle, so
// that both what was wrong (the start) and where (the end) survive while a
// hostile member name of many kilobytes is not echoed back.
func clipMiddle(s string) string {
	if len(s) <= maxEchoBytes {
		return s
	}
	head, tail := maxEchoBytes/2, len(s)-maxEchoBytes/2
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + "…" + s[tail:]
}
