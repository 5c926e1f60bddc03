package dynamo

import (
	"errors"
	"fmt"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Error is a store failure described without the store's message text, which
// can quote request values. Its Error method is safe to log: it names the
// operation, the DynamoDB error code and the request id only.
type Error struct {
	Op        string
	Code      string
	RequestID string
	err       error
}

func (e *Error) Error() string {
	s := "dynamodb " + e.Op + ": " + e.Code
	if e.RequestID != "" {
		s += " (request " + e.RequestID + ")"
	}
	return s
}

// Unwrap returns the SDK error, for errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.err }

// sanitize wraps SDK errors in *Error; other errors pass unchanged.
func sanitize(err error) error {
	var ae smithy.APIError
	var oe *smithy.OperationError
	hasAPI, hasOp := errors.As(err, &ae), errors.As(err, &oe)
	if !hasAPI && !hasOp {
		return err
	}
	e := &Error{Code: "unknown", err: err}
	if ae != nil {
		e.Code = ae.ErrorCode()
	} else if oe != nil {
		e.Code = fmt.Sprintf("%T", errors.Unwrap(oe.Err))
	}
	if oe != nil {
		e.Op = oe.OperationName
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		e.RequestID = re.ServiceRequestID()
	}
	return e
}

// NoAnswer reports whether err is a store request that got no answer at
// all: it could not be sent (nothing listens at the endpoint) or the
// connection broke before a response. A write that got none may still
// have been applied.
func NoAnswer(err error) bool {
	var send *smithyhttp.RequestSendError
	return errors.As(err, &send)
}
