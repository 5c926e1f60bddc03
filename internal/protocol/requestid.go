package protocol

import (
	"fmt"
	"net/http"
)

// RequestID returns metadata.request_id, the application's operation id,
// checked as every call that changes something needs it: present, at most
// MaxRequestIDBytes, visible ASCII without spaces. Otherwise its error is a
// *RequestError, with status 200, that says what the application must send.
func (r *Request) RequestID() (string, error) {
	rid := r.Metadata[RequestIDKey]
	if err := CheckRequestID(rid, RequestIDField); err != nil {
		return "", err
	}
	return rid, nil
}

// RequestIDField is where a callback body carries the request id; refusals
// name it so.
const RequestIDField = "context.metadata." + RequestIDKey

// ValidRequestID reports whether s can be a metadata.request_id: 1 to
// MaxRequestIDBytes bytes of visible ASCII, no spaces. Tools that look an
// operation up by its request id check it with the callback's rule.
func ValidRequestID(s string) bool { return CheckRequestID(s, RequestIDField) == nil }

// CheckRequestID is the one request-id rule, whichever door the id came
// through: nil for a valid id, otherwise a *RequestError that says what
// is wrong with it, naming field, where the caller put it.
func CheckRequestID(rid, field string) error {
	if rid == "" {
		return &RequestError{Status: http.StatusOK, Code: CodeMissingRequestID, Message: field + " is missing, so this call could be repeated by mistake and nothing was created. The application must mint one request_id per operation and keep it across retries; do not invent one."}
	}
	if len(rid) > MaxRequestIDBytes {
		return &RequestError{Status: http.StatusOK, Code: CodeInvalidRequestID, Message: fmt.Sprintf("%s is longer than %d bytes.", field, MaxRequestIDBytes)}
	}
	for i := 0; i < len(rid); i++ {
		if c := rid[i]; c <= ' ' || c > '~' {
			return &RequestError{Status: http.StatusOK, Code: CodeInvalidRequestID, Message: field + " must be visible ASCII characters without spaces."}
		}
	}
	return nil
}
