package protocol

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
)

// TestInternalIsARefusal checks that the fixed 500 body is the one refuse
// builds, so that every refusal has one shape.
func TestInternalIsARefusal(t *testing.T) {
	var r refusal
	if err := json.Unmarshal(internalBody, &r); err != nil {
		t.Fatal(err)
	}
	if got := refuse(http.StatusInternalServerError, StatusError, r.Error.Code, r.Error.Message); !bytes.Equal(got.Body, internalBody) || got.Status != Internal().Status {
		t.Fatalf("refuse builds %d %s; Internal answers %d %s", got.Status, got.Body, Internal().Status, internalBody)
	}
}

// TestRefusalShape pins the bytes of each kind of refusal and notice.
func TestRefusalShape(t *testing.T) {
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
	} {
		if c.a.Status != c.status || string(c.a.Body) != c.body {
			t.Errorf("got %d %s, want %d %s", c.a.Status, c.a.Body, c.status, c.body)
		}
	}
}
