package protocol

import (
	"testing"
)

// TestAnswerBodies pins the bytes the /callback door sends for each kind
// of answer: refusals, notices, the 500 and results.
func TestAnswerBodies(t *testing.T) {
	yes, no := true, false
	for _, c := range []struct {
		a      Answer
		status int
		body   string
	}{
		{Reject("c", "m"), 200, `{"status":"rejected","error":{"code":"c","message":"m"}}`},
		{Refuse(&RequestError{Status: 405, Code: CodeMethodNotAllowed, Message: "use POST"}), 405, `{"status":"rejected","error":{"code":"method_not_allowed","message":"use POST"}}`},
		{Unauthorized("c", "m"), 401, `{"status":"unauthorized","error":{"code":"c","message":"m"}}`},
		{Forbidden("c", "m"), 403, `{"status":"forbidden","error":{"code":"c","message":"m"}}`},
		{NotFound("c", "m"), 200, `{"status":"not_found","error":{"code":"c","message":"m"}}`},
		{Internal(), 500, `{"status":"error","error":{"code":"internal","message":"Internal error. Nothing was left half written; retrying the same call is safe."}}`},
		{Busy(), 200, `{"status":"busy","retryable":true,"message":"The ticket store is busy. Retry this same call shortly; it will not create a duplicate."}`},
		{InProgress(), 200, `{"status":"in_progress","retryable":true,"message":"This operation is already in progress. Do not create another one; check again later with the same request."}`},
		{Done(StatusCreated, &Result{Object: []byte(`{"status":"created","ticket_id":"t"}`), Deduplicated: &no}), 200, `{"status":"created","ticket_id":"t","deduplicated":false}`},
		{Done(StatusCreated, &Result{Object: []byte(`{"status":"created","ticket_id":"t"}`), Delivery: map[string]string{"state": "queued"}, Deduplicated: &yes}), 200,
			`{"status":"created","ticket_id":"t","delivery":{"state":"queued"},"deduplicated":true}`},
		{Done(StatusFound, &Result{Object: []byte(`{}`), Deduplicated: &yes}), 200, `{"deduplicated":true}`},
		{Done(StatusFound, &Result{Object: []byte(`{"status":"found"}`)}), 200, `{"status":"found"}`},
		// A result that is not an object is never sent as one.
		{Done(StatusCreated, &Result{Object: []byte(`"x"`)}), 200, string(Internal().Body())},
	} {
		if c.a.Status != c.status || string(c.a.Body()) != c.body {
			t.Errorf("got %d %s, want %d %s", c.a.Status, c.a.Body(), c.status, c.body)
		}
	}
}
