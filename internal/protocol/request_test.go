package protocol

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

func TestDecodeCurrentPayload(t *testing.T) {
	body := `{"type":"tool_call",
	 "function":{"name":"create_ticket","content":{"title":"Cannot sign in"}},
	 "context":{"externalUserId":"user-a","metadata":{"request_id":"r-1","tenant_id":"t-x"},
	            "callSource":"SomethingNew","conversationToken":"c-1","moment":"2025-05-18T03:36:27.1+02:00"}}`
	r, p := Decode([]byte(body))
	if p != nil {
		t.Fatal(p)
	}
	rid, _ := r.RequestID()
	if r.Function != "create_ticket" || r.Arguments["title"] != "Cannot sign in" || r.ExternalUserID != "user-a" ||
		rid != "r-1" || r.CallSource != "SomethingNew" || r.ConversationToken != "c-1" {
		t.Fatalf("decoded %+v", r)
	}
	if want := time.Date(2025, 5, 18, 1, 36, 27, 100_000_000, time.UTC); !r.Moment.Equal(want) {
		t.Errorf("moment = %v, want %v", r.Moment, want)
	}
}

// TestAcceptedMeansNilError: what Decode and CheckRequestID accept comes
// with an error that is nil as an error, so that the usual err != nil
// holds wherever their error is kept (a nil *RequestError held in an error
// is not nil).
func TestAcceptedMeansNilError(t *testing.T) {
	var err error
	if _, err = Decode([]byte(`{"function":{"name":"f","content":{}}}`)); err != nil {
		t.Errorf("Decode accepted a body with the error %#v", err)
	}
	if err = CheckRequestID("r-1", RequestIDField); err != nil {
		t.Errorf("CheckRequestID accepted r-1 with the error %#v", err)
	}
}

func TestDecodeOlderPayload(t *testing.T) {
	// No type, no offset on moment, nulls where the docs allow them.
	body := `{"function":{"name":"get_ticket","content":{}},
	 "context":{"externalUserId":null,"metadata":{},"conversationToken":null,"moment":"2025-05-18T03:36:27"}}`
	r, p := Decode([]byte(body))
	if p != nil {
		t.Fatal(p)
	}
	if r.ExternalUserID != "" || len(r.Metadata) != 0 || !r.Moment.Equal(time.Date(2025, 5, 18, 3, 36, 27, 0, time.UTC)) {
		t.Fatalf("decoded %+v", r)
	}
}

func TestDecodeRefuses(t *testing.T) {
	huge := `{"function":{"name":"f","content":{"d":"` + strings.Repeat("x", MaxBodyBytes) + `"}}}`
	cases := []struct {
		name, body string
		status     int
		code, says string
	}{
		{"not JSON", `nope`, 400, CodeInvalidRequest, "not acceptable JSON"},
		{"array", `[]`, 400, CodeInvalidRequest, "must be a JSON object"},
		{"unknown type", `{"type":"event","function":{"name":"f","content":{}}}`, 400, CodeInvalidRequest, `only "tool_call"`},
		{"type null", `{"type":null,"function":{"name":"f","content":{}}}`, 400, CodeInvalidRequest, "not null"},
		{"function null", `{"function":null}`, 400, CodeInvalidRequest, "function must be an object"},
		{"name missing", `{"function":{"content":{}}}`, 400, CodeInvalidRequest, "function.name"},
		{"content array", `{"function":{"name":"f","content":[1]}}`, 200, CodeInvalidArguments, "not an array"},
		{"content null", `{"function":{"name":"f","content":null}}`, 200, CodeInvalidArguments, "is null"},
		{"duplicate argument", `{"function":{"name":"f","content":{"a":1,"a":2}}}`, 200, CodeInvalidArguments, `duplicate member name "a"`},
		{"duplicate envelope member", `{"function":{"name":"f","content":{}},"function":{}}`, 400, CodeInvalidRequest, "duplicate member name"},
		{"metadata number", `{"function":{"name":"f","content":{}},"context":{"metadata":{"request_id":7}}}`, 400, CodeInvalidRequest, "context.metadata.request_id must be a string"},
		{"user number", `{"function":{"name":"f","content":{}},"context":{"externalUserId":7}}`, 400, CodeInvalidRequest, "context.externalUserId must be a string"},
		{"bad moment", `{"function":{"name":"f","content":{}},"context":{"moment":"yesterday"}}`, 400, CodeInvalidRequest, "context.moment"},
		{"context string", `{"function":{"name":"f","content":{}},"context":"x"}`, 400, CodeInvalidRequest, "context must be an object"},
		{"too large", huge, 200, CodeTooLarge, "longer than the limit of 131072 bytes"},
		{"argument past the string limit", `{"function":{"name":"f","content":{"d":"` + strings.Repeat("x", MaxStringBytes+1) + `"}}}`, 200, CodeTooLarge,
			"a string in function.content.d is longer than 32768 bytes, the limit for any string. Shorten it"},
		{"argument name past the string limit", `{"function":{"name":"f","content":{"` + strings.Repeat("x", MaxStringBytes+1) + `":1}}}`, 200, CodeTooLarge,
			"a string in function.content is longer than 32768 bytes"},
		{"envelope string past the limit", `{"function":{"name":"f","content":{}},"context":{"x":"` + strings.Repeat("x", MaxStringBytes+1) + `"}}`, 400, CodeInvalidRequest,
			"string longer than 32768 bytes at context.x"},
		{"deep arguments", `{"function":{"name":"f","content":` + strings.Repeat(`{"a":`, MaxDepth) + `1` + strings.Repeat(`}`, MaxDepth) + `}}`, 200, CodeInvalidArguments, "nesting deeper than 64"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Decode([]byte(c.body))
			if err == nil {
				t.Fatal("accepted")
			}
			var p *RequestError
			if !errors.As(err, &p) {
				t.Fatalf("refused with %T %v, not a *RequestError", err, err)
			}
			if p.Status != c.status || p.Code != c.code || !strings.Contains(p.Message, c.says) {
				t.Fatalf("got %d %s %q; want %d %s containing %q", p.Status, p.Code, p.Message, c.status, c.code, c.says)
			}
		})
	}
}

func TestAnswers(t *testing.T) {
	for name, a := range map[string]Answer{
		"reject": Reject("c", "m"), "unauthorized": Unauthorized("c", "m"), "forbidden": Forbidden("c", "m"),
		"busy": Busy(), "in progress": InProgress(), "internal": Internal(),
		"refuse 400": Refuse(&RequestError{Status: 400, Code: "c", Message: "m"}),
	} {
		if len(a.Body()) == 0 || a.Body()[0] != '{' {
			t.Errorf("%s: body %q", name, a.Body())
		}
	}
	if Reject("c", "m").Status != http.StatusOK || Unauthorized("c", "m").Status != 401 || Forbidden("c", "m").Status != 403 || Internal().Status != 500 {
		t.Error("wrong statuses")
	}
	if got := string(Busy().Body()); !strings.Contains(got, `"status":"busy"`) || !strings.Contains(got, `"retryable":true`) {
		t.Errorf("busy body %s", got)
	}
}

func TestRequestID(t *testing.T) {
	for _, c := range []struct {
		name, rid, code, says string
	}{
		{"valid", "r-1:~!", "", ""},
		{"missing", "", CodeMissingRequestID, "mint one request_id per operation"},
		{"too long", strings.Repeat("r", MaxRequestIDBytes+1), CodeInvalidRequestID, "longer than 128 bytes"},
		{"longest", strings.Repeat("r", MaxRequestIDBytes), "", ""},
		{"space", "r 1", CodeInvalidRequestID, "visible ASCII"},
		{"not ASCII", "r-é", CodeInvalidRequestID, "visible ASCII"},
		{"control", "r-\x7f", CodeInvalidRequestID, "visible ASCII"},
	} {
		r := &Request{Metadata: map[string]string{}}
		if c.rid != "" {
			r.Metadata[RequestIDKey] = c.rid
		}
		rid, err := r.RequestID()
		var p *RequestError
		errors.As(err, &p)
		switch {
		case c.code == "" && (err != nil || rid != c.rid):
			t.Errorf("%s: RequestID = %q, %v", c.name, rid, err)
		case c.code != "" && (p == nil || rid != "" || p.Status != http.StatusOK || p.Code != c.code || !strings.Contains(p.Message, c.says)):
			t.Errorf("%s: RequestID = %q, %+v; want 200 %s saying %q", c.name, rid, p, c.code, c.says)
		}
	}
}
