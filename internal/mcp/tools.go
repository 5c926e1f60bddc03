package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/protocol"
	"github.com/oncecall/oncecall/internal/ticket"
)

// The _meta fields a tools/call is read from: AIVAX's flat context.
const (
	MetaNonce             = "_aiv_nonce"
	MetaUser              = "_aiv_external_user_id"
	MetaCallSource        = "_aiv_call_source"
	MetaConversationToken = "_aiv_conversation_token"
	MetaMoment            = "_aiv_moment"
	// metaAIVAXPrefix starts the names AIVAX reserves; unknown ones are
	// not the application's metadata.
	metaAIVAXPrefix = "_aiv"
)

// MaxMetaEntries bounds params._meta: the callback's metadata bound and
// room for AIVAX's and the protocol's own keys.
const MaxMetaEntries = protocol.MaxMetadataEntries + 16

type tool struct {
	Name         string         `json:"name"`
	Description  string         `json:"description"`
	InputSchema  map[string]any `json:"inputSchema"`
	OutputSchema map[string]any `json:"outputSchema,omitempty"`
	Annotations  annotations    `json:"annotations"`
}

// annotations are written out in full, defaults included, so that no
// client has to know MCP's defaults (destructive and open-world true).
type annotations struct {
	ReadOnly    bool `json:"readOnlyHint"`
	Destructive bool `json:"destructiveHint"`
	Idempotent  bool `json:"idempotentHint"`
	OpenWorld   bool `json:"openWorldHint"`
}

// listTools is the tools/list result: the handler's functions, from the
// definitions that validate their arguments.
func listTools(h *callback.Handler, openWorld bool) json.RawMessage {
	tools := make([]tool, 0, len(h.Functions))
	for _, f := range h.Functions {
		t := tool{Name: f.Name, Description: f.Description, InputSchema: f.JSONSchema(), OutputSchema: h.ResultSchema(f.Name)}
		switch f.Name {
		case ticket.GetName:
			t.Annotations = annotations{ReadOnly: true}
		case ticket.CreateName:
			// Idempotent under a request_id: a repeat returns the same ticket.
			t.Annotations = annotations{Idempotent: true, OpenWorld: openWorld}
		default:
			t.Annotations = annotations{Destructive: true, OpenWorld: true}
		}
		tools = append(tools, t)
	}
	b, err := json.Marshal(struct {
		Tools []tool `json:"tools"`
	}{tools})
	if err != nil {
		panic("mcp: tools/list does not encode: " + err.Error())
	}
	return b
}

// toCall maps tools/call params to a callback.Call; msg says what is wrong
// with params when they cannot be one.
func toCall(m *message) (callback.Call, string) {
	c := callback.Call{Door: Door, Metadata: map[string]string{}}
	name, ok := m.params["name"].(string)
	if !ok || name == "" {
		return c, "params.name must be the tool's name, a non-empty string"
	}
	if len(name) > protocol.MaxFunctionNameBytes {
		return c, fmt.Sprintf("params.name is longer than %d bytes", protocol.MaxFunctionNameBytes)
	}
	c.Function = name
	switch a := m.params["arguments"].(type) {
	case nil:
		c.Arguments = map[string]any{}
	case map[string]any:
		c.Arguments = a
	default:
		return c, "params.arguments must be an object of named arguments"
	}
	if len(m.meta) > MaxMetaEntries {
		return c, fmt.Sprintf("params._meta has %d entries; the limit is %d", len(m.meta), MaxMetaEntries)
	}
	fields := []struct {
		key   string
		limit int
		to    *string
	}{
		{MetaNonce, protocol.MaxTokenBytes, &c.Nonce},
		{MetaUser, protocol.MaxUserIDBytes, &c.ExternalUserID},
		{MetaCallSource, protocol.MaxTokenBytes, &c.CallSource},
		{MetaConversationToken, protocol.MaxTokenBytes, &c.ConversationToken},
		{protocol.RequestIDKey, protocol.MaxMetadataValueBytes, &c.RequestID},
	}
	for _, f := range fields {
		v, msg := metaString(m.meta, f.key, f.limit)
		if msg != "" {
			return c, msg
		}
		*f.to = v
	}
	moment, msg := metaString(m.meta, MetaMoment, protocol.MaxTokenBytes)
	if msg != "" {
		return c, msg
	}
	if moment != "" {
		t, err := time.Parse(time.RFC3339Nano, moment)
		if err != nil {
			return c, "params._meta." + MetaMoment + " must be an ISO 8601 date-time with an offset"
		}
		c.Moment = t.UTC()
	}
	for k, v := range m.meta {
		if reserved(k) {
			continue
		}
		s, ok := v.(string)
		if !ok {
			// Another host's own _meta entries (objects, numbers) are its
			// business; the application's metadata is string to string.
			continue
		}
		if len(s) > protocol.MaxMetadataValueBytes {
			return c, fmt.Sprintf("params._meta.%s is longer than %d bytes", clipKey(k), protocol.MaxMetadataValueBytes)
		}
		c.Metadata[k] = s
	}
	return c, ""
}

// metaString reads a _meta field this door uses: a string or null.
func metaString(meta map[string]any, key string, limit int) (string, string) {
	switch v := meta[key].(type) {
	case nil:
		return "", ""
	case string:
		if len(v) > limit {
			return "", fmt.Sprintf("params._meta.%s is longer than %d bytes", key, limit)
		}
		return v, ""
	default:
		return "", fmt.Sprintf("params._meta.%s must be a string or null", key)
	}
}

// reserved reports whether a _meta name is not the application's: AIVAX's
// _aiv names, and the prefixes MCP reserves (a prefix whose second label is
// modelcontextprotocol or mcp, such as io.modelcontextprotocol/), and MCP's
// progressToken.
func reserved(k string) bool {
	if strings.HasPrefix(k, metaAIVAXPrefix) || k == "progressToken" {
		return true
	}
	prefix, _, ok := strings.Cut(k, "/")
	if !ok {
		return false
	}
	labels := strings.Split(prefix, ".")
	return len(labels) >= 2 && (labels[1] == "modelcontextprotocol" || labels[1] == "mcp")
}

func clipKey(k string) string {
	if len(k) <= 64 {
		return k
	}
	return strings.ToValidUTF8(k[:64], "") + "…"
}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type toolResult struct {
	Content           []content       `json:"content"`
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	IsError           bool            `json:"isError"`
}

// answer is what toResult reads of a callback answer.
type answer struct {
	Status  string `json:"status"`
	Message string `json:"message"`
	Error   struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// toResult maps a callback answer to the tools/call response: a result
// for what the call did, a result with isError for what the model can act
// on, an HTTP 401 or 403 for a refused credential or user.
func toResult(id json.RawMessage, ans protocol.Answer) Response {
	var a answer
	_ = json.Unmarshal(ans.Body, &a)
	switch {
	case ans.Status == http.StatusUnauthorized || ans.Status == http.StatusForbidden:
		// The callback's refusal, which discloses nothing stored.
		return rpcError(ans.Status, id, CodeUnauthorized, a.Error.Message, map[string]string{"status": a.Status, "code": a.Error.Code})
	case ans.Status == http.StatusOK && (a.Status == protocol.StatusCreated || a.Status == protocol.StatusFound):
		return result(id, toolResult{Content: []content{{"text", string(ans.Body)}}, StructuredContent: ans.Body})
	}
	// Rejections, not_found, in_progress, busy and internal errors: words
	// the model can act on.
	text := a.Message
	if a.Error.Code != "" {
		text = a.Error.Code + ": " + a.Error.Message
	} else if a.Status != "" {
		text = a.Status + ": " + a.Message
	}
	return result(id, toolResult{Content: []content{{"text", text}}, IsError: true})
}
