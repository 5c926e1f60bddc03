package protocol

import (
	"encoding/json"
	"net/http"
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

// Answer is one callback response: the HTTP status and a small JSON body.
type Answer struct {
	Status int
	Body   []byte
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

// JSON encodes v as an answer with the given HTTP status. v must be
// encodable; the types of this package always are.
func JSON(status int, v any) Answer {
	b, err := json.Marshal(v)
	if err != nil {
		return Internal()
	}
	return Answer{Status: status, Body: b}
}

// refuse builds every refusal body: httpStatus is the HTTP status, status
// the body's "status" member.
func refuse(httpStatus int, status, code, message string) Answer {
	return JSON(httpStatus, refusal{Status: status, Error: errorDetail{Code: code, Message: message}})
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
	return JSON(http.StatusOK, notice{
		Status:    StatusInProgress,
		Retryable: true,
		Message:   "This operation is already in progress. Do not create another one; check again later with the same request.",
	})
}

// Busy is a 200 answer for a store that could not decide the call now.
func Busy() Answer {
	return JSON(http.StatusOK, notice{
		Status:    StatusBusy,
		Retryable: true,
		Message:   "The ticket store is busy. Retry this same call shortly; it will not create a duplicate.",
	})
}

// internalBody is fixed so that Internal cannot fail; TestInternalIsARefusal
// checks that it is the body refuse builds.
var internalBody = []byte(`{"status":"error","error":{"code":"internal","message":"Internal error. Nothing was left half written; retrying the same call is safe."}}`)

// Internal is the 500 answer.
func Internal() Answer {
	return Answer{Status: http.StatusInternalServerError, Body: internalBody}
}
