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

// Answer is one callback response: the HTTP status and a small JSON body.
type Answer struct {
	Status int
	Body   []byte
}

// ErrorDetail is the "error" member of a refusal.
type ErrorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type refusal struct {
	Status    string      `json:"status"`
	Retryable bool        `json:"retryable,omitempty"`
	Error     ErrorDetail `json:"error"`
}

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

// Reject is a 200 answer that tells the model what to correct.
func Reject(code, message string) Answer {
	return JSON(http.StatusOK, refusal{Status: StatusRejected, Error: ErrorDetail{code, message}})
}

// Refuse answers p with its own status: 200 rejections for the model, 400
// for envelope problems.
func Refuse(p *Problem) Answer {
	if p.Status == http.StatusOK {
		return Reject(p.Code, p.Message)
	}
	return JSON(p.Status, refusal{Status: StatusRejected, Error: ErrorDetail{p.Code, p.Message}})
}

// Unauthorized is a 401 answer: the nonce is missing.
func Unauthorized(code, message string) Answer {
	return JSON(http.StatusUnauthorized, refusal{Status: StatusUnauthorized, Error: ErrorDetail{code, message}})
}

// Forbidden is a 403 answer: the caller is not allowed. It never discloses
// stored data.
func Forbidden(code, message string) Answer {
	return JSON(http.StatusForbidden, refusal{Status: StatusForbidden, Error: ErrorDetail{code, message}})
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

// internalBody is fixed so that Internal cannot fail.
var internalBody = []byte(`{"status":"error","error":{"code":"internal","message":"Internal error. Nothing was left half written; retrying the same call is safe."}}`)

// Internal is the 500 answer.
func Internal() Answer {
	return Answer{Status: http.StatusInternalServerError, Body: internalBody}
}
