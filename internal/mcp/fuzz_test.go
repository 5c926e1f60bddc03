package mcp

import (
	"encoding/json"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oncecall/oncecall/internal/protocol"
)

// maxMessageBytes bounds every refusal message: whatever the body, the
// answer says what to fix without repeating the payload.
const maxMessageBytes = 512

// FuzzEnvelope feeds what this door adds to the SDK anything: the strict
// parse of the body, and the mapping of tools/call params (as the SDK
// decodes them) onto a callback.Call. Neither may panic; every refusal is
// short, valid UTF-8; a logged method is one MCP defines or UnknownMethod;
// and a mapped Call respects the callback's limits and holds no reserved
// name in its metadata.
func FuzzEnvelope(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":{"title":"x"},"_meta":{"_aiv_nonce":"n","_aiv_external_user_id":"user-a","request_id":"r-1","_aiv_moment":"2026-11-30T12:00:00.1234+00:00"}}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18"}}`))
	f.Add([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"get_ticket","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":3,"_aiv_nonce":null}}}`))
	f.Add([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`))
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":{"title":"x","title":"y"}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		root, code, msg := strict(body)
		if msg != "" {
			if code != jsonrpc.CodeParseError && code != jsonrpc.CodeInvalidRequest {
				t.Fatalf("refusal code %d", code)
			}
			if len(msg) > maxMessageBytes || !utf8.ValidString(msg) {
				t.Fatalf("parse refusal of %d bytes, valid UTF-8 %v", len(msg), utf8.ValidString(msg))
			}
			return
		}
		if m := logMethod(root); m != "" && m != UnknownMethod && !contains(Methods, m) {
			t.Fatalf("logged method %q", m)
		}
		var req struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		var p sdk.CallToolParamsRaw
		if json.Unmarshal(body, &req) != nil || req.Method != "tools/call" || json.Unmarshal(req.Params, &p) != nil || p.Name == "" {
			return
		}
		c, res, err := toCall(&p)
		if err != nil {
			var je *jsonrpc.Error
			if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || len(je.Message) > maxMessageBytes || !utf8.ValidString(je.Message) {
				t.Fatalf("toCall error %v", err)
			}
			return
		}
		if res != nil {
			out, err := toResult(*res)
			if err != nil {
				t.Fatalf("arguments refusal %+v: %v", res, err)
			}
			text := out.Content[0].(*sdk.TextContent).Text
			if !out.IsError || len(text) > maxMessageBytes || !utf8.ValidString(text) {
				t.Fatalf("arguments refusal %+v", out)
			}
			return
		}
		if c.Door != Door || c.Arguments == nil {
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

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
