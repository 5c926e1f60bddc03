package protocol

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
)

// Status values of a callback answer's "status" field. AIVAX reads no field
// of the answer; these are oncecall's conventions for the model and for the
// application.
const (
	StatusCreated      = "created"
	StatusRejected     = "rejected"
	StatusInProgress   = "in_progress"
	StatusBusy         = "busy"
	StatusFound        = "found"
	StatusNotFound     = "not_found"
	StatusUnauthorized = "unauthorized"
	StatusForbidden    = "forbidden"
	StatusError        = "error"
)

// Codes of refusals the transports answer before a call reaches the handler.
const (
	// CodeNoRoute refuses a path oncecall does not serve (HTTP 404).
	CodeNoRoute = "not_found"
	// CodeMethodNotAllowed refuses a method a path does not take (HTTP 405).
	CodeMethodNotAllowed = "method_not_allowed"
)

// Answer is what a call answered, as a value: each door encodes it, the
// /callback door as the JSON Body gives, the MCP door as a tool result
// (a refusal's Code and Message, a Result's JSON), and the log line and
// metrics read Outcome and Code, never an encoded body.
type Answer struct {
	// Status is the HTTP status the /callback door answers with.
	Status int
	// Outcome is the body's "status" member (StatusCreated, ...); empty
	// in an Answer that only says a step passed.
	Outcome string
	// Code and Message say what a refusal refused and how to fix it;
	// Message alone, with Retryable, what a notice asks.
	Code, Message string
	Retryable     bool
	// Result is what a function answered when it did what was asked.
	Result *Result
}

// Result is a function's answer when it did what was asked: a JSON
// object, then, when set, its "delivery" and "deduplicated" members, in
// that order.
type Result struct {
	// Object is a JSON object: a stored result, byte for byte as stored,
	// or a value's encoding.
	Object []byte
	// Delivery, when not nil, is encoded as the "delivery" member.
	Delivery any
	// Deduplicated, when not nil, is encoded as the "deduplicated" member.
	Deduplicated *bool
}

// JSON encodes r: Object with Delivery and Deduplicated appended, so that
// the first answer and every replay of a stored result read the same
// apart from the flag. An error means Object is not a JSON object or
// Delivery cannot be encoded.
func (r *Result) JSON() ([]byte, error) {
	o := r.Object
	if len(o) < 2 || o[0] != '{' || o[len(o)-1] != '}' {
		return nil, errors.New("protocol: a result is not a JSON object")
	}
	out := make([]byte, 0, len(o)+64)
	out = append(out, o[:len(o)-1]...)
	more := len(o) > 2
	member := func(name string, v []byte) {
		if more {
			out = append(out, ',')
		}
		more = true
		out = append(out, '"')
		out = append(out, name...)
		out = append(out, '"', ':')
		out = append(out, v...)
	}
	if r.Delivery != nil {
		v, err := json.Marshal(r.Delivery)
		if err != nil {
			return nil, err
		}
		member("delivery", v)
	}
	if r.Deduplicated != nil {
		member("deduplicated", []byte(strconv.FormatBool(*r.Deduplicated)))
	}
	return append(out, '}'), nil
}

// Done is the answer of a function that did what was asked: 200, r.
func Done(outcome string, r *Result) Answer {
	return Answer{Status: http.StatusOK, Outcome: outcome, Result: r}
}

// Value is Done with v's JSON encoding, a JSON object, as the Result: for
// answers built from values rather than stored. v must encode as an
// object; the types that use it always do.
func Value(outcome string, v any) Answer {
	b, err := json.Marshal(v)
	if err != nil {
		return Internal()
	}
	return Done(outcome, &Result{Object: b})
}

// Body is a's encoding for the /callback door: a Result's JSON, or
// {"status":…,"error":{"code":…,"message":…}} for a refusal, or
// {"status":…,"retryable":true,"message":…} for a notice. A Result that
// cannot be encoded is answered as Internal's body.
func (a Answer) Body() []byte {
	var v any
	switch {
	case a.Result != nil:
		b, err := a.Result.JSON()
		if err != nil {
			return Internal().Body()
		}
		return b
	case a.Code != "":
		v = refusal{Status: a.Outcome, Error: errorDetail{Code: a.Code, Message: a.Message}}
	case a.Outcome != "":
		v = notice{Status: a.Outcome, Retryable: a.Retryable, Message: a.Message}
	default:
		return nil
	}
	b, _ := json.Marshal(v) // strings only: never fails
	return b
}

// errorDetail is the "error" member of a refusal.
type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// refusal is the body of every answer that did not do what was asked:
// {"status":…,"error":{"code":…,"message":…}}.
type refusal struct {
	Status string      `json:"status"`
	Error  errorDetail `json:"error"`
}

// notice is the body of an answer that asks the caller to come back:
// {"status":…,"retryable":true,"message":…}.
type notice struct {
	Status    string `json:"status"`
	Retryable bool   `json:"retryable"`
	Message   string `json:"message"`
}

// refuse builds every refusal: httpStatus is the HTTP status, status the
// body's "status" member.
func refuse(httpStatus int, status, code, message string) Answer {
	return Answer{Status: httpStatus, Outcome: status, Code: code, Message: message}
}

// Reject is a 200 answer that tells the model what to correct.
func Reject(code, message string) Answer {
	return refuse(http.StatusOK, StatusRejected, code, message)
}

// Refuse answers p with its own status: 200 rejections for the model, 400
// for envelope problems, and the transports' own 4xx refusals.
func Refuse(p *RequestError) Answer {
	return refuse(p.Status, StatusRejected, p.Code, p.Message)
}

// Unauthorized is a 401 answer: the nonce is missing.
func Unauthorized(code, message string) Answer {
	return refuse(http.StatusUnauthorized, StatusUnauthorized, code, message)
}

// Forbidden is a 403 answer: the caller is not allowed. It never discloses
// stored data.
func Forbidden(code, message string) Answer {
	return refuse(http.StatusForbidden, StatusForbidden, code, message)
}

// NotFound is a 200 answer for something the caller may not see, or that
// does not exist: the two are answered alike.
func NotFound(code, message string) Answer {
	return refuse(http.StatusOK, StatusNotFound, code, message)
}

// InProgress is a 200 answer for an operation that is claimed but not
// finished: the caller must not start another one.
func InProgress() Answer {
	return Answer{Status: http.StatusOK, Outcome: StatusInProgress, Retryable: true,
		Message: "This operation is already in progress. Do not create another one; check again later with the same request."}
}

// Busy is a 200 answer for a store that could not decide the call now.
func Busy() Answer {
	return Answer{Status: http.StatusOK, Outcome: StatusBusy, Retryable: true,
		Message: "The ticket store is busy. Retry this same call shortly; it will not create a duplicate."}
}

// CodeInternal is the code of the 500 answer.
const CodeInternal = "internal"

// Internal is the 500 answer.
func Internal() Answer {
	return refuse(http.StatusInternalServerError, StatusError, CodeInternal,
		"Internal error. Nothing was left half written; retrying the same call is safe.")
}
