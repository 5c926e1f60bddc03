package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/oncecall/oncecall/internal/callback"
	"github.com/oncecall/oncecall/internal/canonjson"
	"github.com/oncecall/oncecall/internal/protocol"
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

// ListTTL is how long a client may cache server/discover and tools/list:
// the tools change only with a deployment. AIVAX caches its list for 600 s.
const ListTTL = 10 * time.Minute

// instructions is what initialize and server/discover tell the host
// about using the tools: each tool's Instructions.
func instructions(h *callback.Handler) string {
	var parts []string
	for _, t := range h.Tools {
		if t.Instructions != "" {
			parts = append(parts, t.Instructions)
		}
	}
	return strings.Join(parts, " ")
}

// newSDK builds the SDK's stateless, JSON-only Streamable HTTP handler
// with the handler's functions as tools.
func (d *Handler) newSDK(o Options) http.Handler {
	version := o.Version
	if version == "" {
		version = "dev"
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: ServerName, Version: version}, &sdk.ServerOptions{
		Instructions: instructions(d.h),
		// Tools only: no logging capability, and the list never changes
		// while a server runs.
		Capabilities:              &sdk.ServerCapabilities{Tools: &sdk.ToolCapabilities{}},
		SupportedProtocolVersions: Versions,
		SetCacheable: func(_ context.Context, _ sdk.Request, c *sdk.Cacheable) {
			c.TTLMs, c.CacheScope = int(ListTTL/time.Millisecond), "public"
		},
	})
	for _, t := range tools(d.h, o.OpenWorld) {
		srv.AddTool(t, d.call)
	}
	return sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		Stateless:           true,
		JSONResponse:        true,
		MaxRequestBodyBytes: protocol.MaxBodyBytes,
	})
}

// tools are the handler's tools as MCP tools, from the definitions that
// validate their arguments; openWorld says the deployment has a
// destination.
func tools(h *callback.Handler, openWorld bool) []*sdk.Tool {
	out := make([]*sdk.Tool, 0, len(h.Tools))
	for _, ct := range h.Tools {
		f, hints := ct.Function, ct.Hints
		t := &sdk.Tool{Name: f.Name, Description: f.Description, InputSchema: f.JSONSchema(), OutputSchema: ct.Result(h.Outbox != nil)}
		if hints.ReadOnly {
			t.Annotations = &sdk.ToolAnnotations{ReadOnlyHint: true}
		} else {
			destructive, world := hints.Destructive, hints.Delivers && openWorld
			t.Annotations = &sdk.ToolAnnotations{DestructiveHint: &destructive, IdempotentHint: hints.Idempotent, OpenWorldHint: &world}
		}
		out = append(out, t)
	}
	return out
}

// call serves tools/call: the params mapped to a callback.Call, run
// through the callback's pipeline, its answer mapped to a result.
func (d *Handler) call(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
	x := exchangeFrom(ctx)
	c, refused, err := toCall(req.Params)
	switch {
	case err != nil:
		x.refused.Store(codeInvalidParams)
		return nil, err
	case refused != nil:
		x.refused.Store(refused.Code)
		return toResult(*refused)
	}
	if c.Nonce == "" {
		c.Nonce = x.nonce
	}
	ans := d.h.Serve(x.ctx, c)
	x.served.Store(true)
	return toResult(ans)
}

// toCall maps tools/call params to a callback.Call. What it cannot map
// is answered before the pipeline: a rejection the model can correct for
// arguments that are not acceptable JSON, a -32602 error for params of
// the wrong shape.
func toCall(p *sdk.CallToolParamsRaw) (callback.Call, *protocol.Answer, error) {
	c := callback.Call{Door: Door, Function: p.Name, Metadata: map[string]string{}}
	args, res, err := arguments(p.Arguments)
	if res != nil || err != nil {
		return c, res, err
	}
	c.Arguments = args
	meta := p.Meta
	if len(meta) > MaxMetaEntries {
		return c, nil, invalidParams(fmt.Sprintf("params._meta has %d entries; the limit is %d", len(meta), MaxMetaEntries))
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
		v, msg := metaString(meta, f.key, f.limit)
		if msg != "" {
			return c, nil, invalidParams(msg)
		}
		*f.to = v
	}
	moment, msg := metaString(meta, MetaMoment, protocol.MaxTokenBytes)
	if msg != "" {
		return c, nil, invalidParams(msg)
	}
	if moment != "" {
		t, err := time.Parse(time.RFC3339Nano, moment)
		if err != nil {
			return c, nil, invalidParams("params._meta." + MetaMoment + " must be an ISO 8601 date-time with an offset")
		}
		c.Moment = t.UTC()
	}
	for k, v := range meta {
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
			return c, nil, invalidParams(fmt.Sprintf("params._meta.%s is longer than %d bytes", clipKey(k), protocol.MaxMetadataValueBytes))
		}
		c.Metadata[k] = s
	}
	return c, nil, nil
}

// arguments parses params.arguments as the callback parses
// function.content: a value that is not acceptable JSON (a duplicate
// member, an integer beyond 2^53, a string past the limit) is a rejection
// the model can correct.
func arguments(raw json.RawMessage) (map[string]any, *protocol.Answer, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil, nil
	}
	v, err := canonjson.Parse(raw, limits)
	if err != nil {
		path, reason := argumentsPath, err.Error()
		var se *canonjson.Error
		if errors.As(err, &se) {
			path, reason = argumentsPath+pathSuffix(se.Path), se.Reason
		}
		if errors.Is(err, canonjson.ErrTooLong) {
			a := protocol.Reject(protocol.CodeTooLarge, fmt.Sprintf("%s is longer than %d bytes, the limit for any string. Shorten it and call again.", clipPath(path), protocol.MaxStringBytes))
			return nil, &a, nil
		}
		a := protocol.Reject(protocol.CodeInvalidArguments, fmt.Sprintf("the arguments are not valid: %s at %s. Send the arguments as one JSON object with unique member names.", clipPath(reason), clipPath(path)))
		return nil, &a, nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, nil, invalidParams("params.arguments must be an object of named arguments")
	}
	return m, nil, nil
}

// argumentsPath is where a tools/call carries the arguments.
const argumentsPath = "params.arguments"

// pathSuffix continues argumentsPath with a path inside the arguments.
func pathSuffix(p string) string {
	if p == "" || strings.HasPrefix(p, "[") {
		return p
	}
	return "." + p
}

func invalidParams(msg string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: msg}
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

// toResult encodes a call's answer as the tools/call answer: a result for
// what the call did, a result with isError for what the model can act
// on, and a JSON-RPC error, which MCP clients show their user, for a
// refused nonce or user. The refusal is no HTTP 401 or 403: clients read
// those as the start of OAuth, and their user would never see it.
func toResult(ans protocol.Answer) (*sdk.CallToolResult, error) {
	switch {
	case ans.Status == http.StatusUnauthorized || ans.Status == http.StatusForbidden:
		// The callback's refusal, which discloses nothing stored.
		data, _ := json.Marshal(map[string]string{"status": ans.Outcome, "code": ans.Code})
		return nil, &jsonrpc.Error{Code: CodeUnauthorized, Message: ans.Code + ": " + ans.Message, Data: data}
	case ans.Result != nil:
		b, err := ans.Result.JSON()
		if err != nil {
			i := protocol.Internal()
			return toolError(i.Code, i.Message), nil
		}
		// The same bytes as the /callback door's body, as text for the
		// model and as structured content.
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}, StructuredContent: json.RawMessage(b)}, nil
	case ans.Code != "":
		// Rejections, not_found and internal errors: words the model can
		// act on.
		return toolError(ans.Code, ans.Message), nil
	case ans.Outcome != "":
		// in_progress and busy.
		return toolError(ans.Outcome, ans.Message), nil
	}
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: ans.Message}}, IsError: true}, nil
}

// toolError is a result with isError whose one text block is
// "<code>: <message>".
func toolError(code, message string) *sdk.CallToolResult {
	return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: code + ": " + message}}, IsError: true}
}
