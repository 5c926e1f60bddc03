package protocol_test

import (
	"errors"
	"net/http"
	"reflect"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/oncecall/oncecall/internal/canonjson"
	"github.com/oncecall/oncecall/internal/protocol"
)

// maxMessageBytes bounds every refusal message Decode writes: whatever the
// body, the answer says what to fix without repeating the payload.
const maxMessageBytes = 512

// FuzzDecode feeds the body decoder anything. It must never panic; every
// refusal must carry a documented status and code and a short, valid UTF-8
// message; every accepted body must respect the limits, and writing the
// decoded request back as JSON and decoding it again must give it back.
// The seed corpus (testdata/fuzz/FuzzDecode) holds valid bodies and bodies
// from the hostile catalogue.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"type":"tool_call","function":{"name":"create_ticket","content":{"title":"Cannot sign in"}},"context":{"externalUserId":"user-a","metadata":{"request_id":"r-1"},"moment":"2026-11-30T12:00:00.1234+00:00"}}`))
	f.Add([]byte(`{"function":{"name":"get_ticket","content":null},"context":null}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := protocol.Decode(body)
		if (req == nil) == (err == nil) {
			t.Fatalf("Decode returned %v and %v", req, err)
		}
		if err != nil {
			var p *protocol.RequestError
			if !errors.As(err, &p) {
				t.Fatalf("Decode refused %q with %T, not a *protocol.RequestError", body, err)
			}
			checkProblem(t, body, p)
			return
		}
		checkLimits(t, req)
		again := encode(t, req)
		if len(again) > protocol.MaxBodyBytes {
			return // a canonical number can be longer than its literal
		}
		req2, p2 := protocol.Decode(again)
		if p2 != nil {
			t.Fatalf("the decoded request, written back as %q, is refused: %v", again, p2)
		}
		if !req2.Moment.Equal(req.Moment) {
			t.Fatalf("moment %v became %v", req.Moment, req2.Moment)
		}
		req.Moment, req2.Moment = time.Time{}, time.Time{}
		if !reflect.DeepEqual(req, req2) {
			t.Fatalf("round trip changed the request:\n%#v\n%#v", req, req2)
		}
	})
}

func checkProblem(t *testing.T, body []byte, p *protocol.RequestError) {
	t.Helper()
	switch {
	case p.Status == http.StatusBadRequest && p.Code == protocol.CodeInvalidRequest:
	case p.Status == http.StatusOK && (p.Code == protocol.CodeInvalidArguments || p.Code == protocol.CodeTooLarge):
	default:
		t.Fatalf("undocumented refusal %d %q for %q", p.Status, p.Code, body)
	}
	if p.Message == "" || len(p.Message) > maxMessageBytes || !utf8.ValidString(p.Message) {
		t.Fatalf("message of %d bytes (valid UTF-8: %v) for %q: %q", len(p.Message), utf8.ValidString(p.Message), body, p.Message)
	}
}

func checkLimits(t *testing.T, r *protocol.Request) {
	t.Helper()
	if r.Function == "" || len(r.Function) > protocol.MaxFunctionNameBytes {
		t.Fatalf("function name %q accepted", r.Function)
	}
	if r.Arguments == nil || r.Metadata == nil {
		t.Fatal("nil arguments or metadata")
	}
	if len(r.ExternalUserID) > protocol.MaxUserIDBytes || len(r.CallSource) > protocol.MaxTokenBytes || len(r.ConversationToken) > protocol.MaxTokenBytes {
		t.Fatal("a context string past its limit was accepted")
	}
	if len(r.Metadata) > protocol.MaxMetadataEntries {
		t.Fatalf("%d metadata entries accepted", len(r.Metadata))
	}
	for k, v := range r.Metadata {
		if len(v) > protocol.MaxMetadataValueBytes || !utf8.ValidString(k) || !utf8.ValidString(v) {
			t.Fatalf("metadata %q=%q accepted", k, v)
		}
	}
	if _, err := canonjson.Marshal(r.Arguments); err != nil {
		t.Fatalf("accepted arguments have no canonical form: %v", err)
	}
}

// encode writes a decoded request back as a callback body.
func encode(t *testing.T, r *protocol.Request) []byte {
	t.Helper()
	ctx := map[string]any{}
	for name, v := range map[string]string{"externalUserId": r.ExternalUserID, "callSource": r.CallSource, "conversationToken": r.ConversationToken} {
		if v != "" {
			ctx[name] = v
		}
	}
	if !r.Moment.IsZero() {
		ctx["moment"] = r.Moment.Format(time.RFC3339Nano)
	}
	md := map[string]any{}
	for k, v := range r.Metadata {
		md[k] = v
	}
	ctx["metadata"] = md
	b, err := canonjson.Marshal(map[string]any{
		"type":     protocol.TypeToolCall,
		"function": map[string]any{"name": r.Function, "content": r.Arguments},
		"context":  ctx,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
