package mcp

import (
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"testing"
	"unicode/utf8"

	"github.com/oncecall/oncecall/internal/protocol"
)

// maxMessageBytes bounds every refusal message: whatever the body, the
// answer says what to fix without repeating the payload.
const maxMessageBytes = 512

// FuzzEnvelope feeds the MCP envelope decoder, and the tools/call mapping
// onto a callback.Call, anything. Neither may panic; every refusal must be
// a JSON-RPC error with a code MCP names, a 200 or 400 status and a short,
// valid UTF-8 message; an accepted request's id is echoed as sent; and a
// mapped Call respects the callback's limits and holds no reserved name in
// its metadata.
func FuzzEnvelope(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":{"title":"x"},"_meta":{"_aiv_nonce":"n","_aiv_external_user_id":"user-a","request_id":"r-1","_aiv_moment":"2026-11-30T12:00:00.1234+00:00"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_ticket","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":3,"_aiv_nonce":null}}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		m, res, code := decode(body)
		if code == codeInvalidArguments {
			checkToolError(t, res)
			return
		}
		if code != "" {
			checkError(t, res)
			return
		}
		if m == nil || m.meta == nil && m.method != "" {
			t.Fatalf("accepted %q without a message", body)
		}
		if m.id != nil {
			echo := result(m.id, struct{}{})
			var back struct{ ID json.RawMessage }
			if err := json.Unmarshal(echo.Body, &back); err != nil || !bytes.Equal(back.ID, m.id) {
				t.Fatalf("id %s echoed as %s", m.id, back.ID)
			}
		}
		if m.method != "tools/call" {
			return
		}
		c, problem := toCall(m)
		if problem != "" {
			if len(problem) > maxMessageBytes || !utf8.ValidString(problem) {
				t.Fatalf("toCall problem of %d bytes, valid UTF-8 %v", len(problem), utf8.ValidString(problem))
			}
			return
		}
		if c.Door != Door || c.Function == "" || len(c.Function) > protocol.MaxFunctionNameBytes || c.Arguments == nil {
			t.Fatalf("call %+v", c)
		}
		if len(c.ExternalUserID) > protocol.MaxUserIDBytes || len(c.RequestID) > protocol.MaxMetadataValueBytes ||
			len(c.CallSource) > protocol.MaxTokenBytes || len(c.ConversationToken) > protocol.MaxTokenBytes || len(c.Metadata) > MaxMetaEntries {
			t.Fatalf("call over the limits: %+v", c)
		}
		for k, v := range c.Metadata {
			if reserved(k) || len(v) > protocol.MaxMetadataValueBytes {
				t.Fatalf("metadata %q (%d bytes) kept", k, len(v))
			}
		}
	})
}

func checkError(t *testing.T, res Response) {
	t.Helper()
	var e struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(res.Body, &e); err != nil || e.JSONRPC != "2.0" || e.ID == nil {
		t.Fatalf("refusal %d %q is not a JSON-RPC error", res.Status, res.Body)
	}
	codes := []int{CodeParseError, CodeInvalidRequest, CodeInvalidParams}
	if !slices.Contains(codes, e.Error.Code) || (res.Status != http.StatusOK && res.Status != http.StatusBadRequest) {
		t.Fatalf("refusal %d with code %d", res.Status, e.Error.Code)
	}
	if len(e.Error.Message) > maxMessageBytes || !utf8.ValidString(e.Error.Message) || e.Error.Message == "" {
		t.Fatalf("message of %d bytes, valid UTF-8 %v: %.80q", len(e.Error.Message), utf8.ValidString(e.Error.Message), e.Error.Message)
	}
}

// checkToolError checks an isError result for arguments that are not
// acceptable JSON.
func checkToolError(t *testing.T, res Response) {
	t.Helper()
	var r struct {
		Result struct {
			Content []struct{ Text string }
			IsError bool
		}
	}
	if err := json.Unmarshal(res.Body, &r); err != nil || res.Status != http.StatusOK || !r.Result.IsError || len(r.Result.Content) != 1 {
		t.Fatalf("arguments refusal %d %q is not an isError result", res.Status, res.Body)
	}
	if text := r.Result.Content[0].Text; len(text) > maxMessageBytes || !utf8.ValidString(text) {
		t.Fatalf("text of %d bytes, valid UTF-8 %v", len(text), utf8.ValidString(text))
	}
}
