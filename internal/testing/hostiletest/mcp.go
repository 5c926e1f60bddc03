package hostiletest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"

	"github.com/oncecall/oncecall/internal/protocol"
)

// MCPCase is one hostile or broken POST /mcp and the answer it must get,
// as the MCP door's response table (docs/mcp.md) gives it.
type MCPCase struct {
	Name string
	// Area is envelope, params, meta, arguments, identity or headers.
	Area string
	Body []byte
	// Headers are sent besides Content-Type; the nonce travels in
	// params._meta unless a case says otherwise.
	Headers []Header
	// Status is the HTTP status of the answer.
	Status int
	// RPCCode is the JSON-RPC error code; 0 for a tool result.
	RPCCode int
	// Code is the refusal's code: data.code of a -32001 error, or the code
	// an isError result's text starts with; "" for a success.
	Code string
	// Fix is a phrase the message (or the text) must contain.
	Fix string
	// Writes is how many tickets the call creates.
	Writes int
	// Authorized marks the cases whose caller may see the seeded operation.
	Authorized bool
	// Deduplicated, for a success, says the answer must be a replay.
	Deduplicated bool
	// Plain marks a refusal the MCP SDK answers at the transport, before
	// any JSON-RPC exchange: a text/plain body saying Fix, or none (a 202).
	Plain bool
}

// JSON-RPC codes the MCP door answers (internal/mcp names them; they are
// repeated here so the catalogue states what the spec says, not what the
// code happens to do).
const (
	rpcParse        = -32700
	rpcInvalid      = -32600
	rpcMethod       = -32601
	rpcParams       = -32602
	rpcHeader       = -32020
	rpcVersion      = -32022
	rpcUnauthorized = -32001
)

// mcpCall is a tools/call with params._meta meta (JSON members, without
// braces) and arguments args.
func mcpCall(name, args, meta string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + name + `","arguments":` + args + `,"_meta":{` + meta + `}}}`)
}

// MCPCases returns the MCP door's catalogue for a server whose hook key
// n.Valid hashes. The seeded operation (Owner, SecretRequestID,
// SecretArgs) is made through the callback before the first case.
func MCPCases(n Nonces) []MCPCase {
	valid := `"_aiv_nonce":"` + n.Valid + `"`
	userA := `"_aiv_external_user_id":"user-a"`
	rid := `"request_id":"r-hostile-mcp"`
	std := valid + "," + userA + "," + rid
	good := `{"title":"Cannot sign in"}`
	call := func(meta string) []byte { return mcpCall("create_ticket", good, meta) }
	secret := func(user, extra string) []byte {
		return mcpCall("create_ticket", SecretArgs, valid+`,"_aiv_external_user_id":"`+user+`",`+extra+`"request_id":"`+SecretRequestID+`"`)
	}
	rpc := func(area, name string, body []byte, status, code int, fix string) MCPCase {
		return MCPCase{Name: name, Area: area, Body: body, Status: status, RPCCode: code, Fix: fix}
	}
	tool := func(area, name string, body []byte, code, fix string) MCPCase {
		return MCPCase{Name: name, Area: area, Body: body, Status: http.StatusOK, Code: code, Fix: fix}
	}
	// A refused credential or user is a JSON-RPC error in an HTTP 200,
	// which clients show their user (an HTTP 401 or 403 starts OAuth).
	deny := func(area, name string, body []byte, _ int, code, fix string) MCPCase {
		return MCPCase{Name: name, Area: area, Body: body, Status: http.StatusOK, RPCCode: rpcUnauthorized, Code: code, Fix: fix}
	}
	plain := func(area, name string, body []byte, status int, fix string) MCPCase {
		return MCPCase{Name: name, Area: area, Body: body, Status: status, Plain: true, Fix: fix}
	}
	bad, ok := http.StatusBadRequest, http.StatusOK
	long := strings.Repeat("k", protocol.MaxStringBytes+1)
	many := std
	for i := range protocol.MaxMetadataEntries + 16 {
		many += fmt.Sprintf(`,"m%d":"v"`, i)
	}
	nested := strings.Repeat("[", protocol.MaxDepth) + strings.Repeat("]", protocol.MaxDepth)

	return []MCPCase{
		// Not JSON: -32700.
		rpc("envelope", "empty body", nil, bad, rpcParse, "parse error"),
		rpc("envelope", "not JSON", []byte("call create_ticket please"), bad, rpcParse, "parse error"),
		rpc("envelope", "truncated", call(std)[:70], bad, rpcParse, "parse error"),
		rpc("envelope", "byte order mark", append([]byte("\xef\xbb\xbf"), call(std)...), bad, rpcParse, "parse error"),
		rpc("envelope", "two documents", append(call(std), `{}`...), bad, rpcParse, "parse error"),
		rpc("envelope", "duplicate id", []byte(`{"jsonrpc":"2.0","id":1,"id":2,"method":"ping"}`), bad, rpcParse, `duplicate member name "id"`),
		rpc("meta", "duplicate request_id in _meta", call(std+`,"request_id":"r-secret"`), bad, rpcParse, `duplicate member name "request_id"`),
		rpc("meta", "duplicate nonce through an escape", call(std+`,"\u005faiv_nonce":"x"`), bad, rpcParse, `duplicate member name "_aiv_nonce"`),
		rpc("meta", "user id of invalid UTF-8", call(valid+",\"_aiv_external_user_id\":\"user-\xff\","+rid), bad, rpcParse, "invalid UTF-8"),
		rpc("meta", "nesting past the limit in _meta", call(std+`,"deep":`+nested), bad, rpcParse, "nesting deeper than 64 levels"),
		// A problem inside params.arguments switches nothing off around
		// it: the first arguments with a duplicate member, a clean second
		// one, and two of each _meta field are refused whole.
		rpc("envelope", "a broken arguments, then a clean one and two users", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","arguments":{"title":"x","title":"y"},"arguments":`+good+`,"_meta":{`+std+`,"_aiv_external_user_id":"user-b","request_id":"r-secret"}}}`), bad, rpcParse, `duplicate member name "arguments"`),
		rpc("meta", "a broken arguments beside a duplicate request_id", mcpCall("create_ticket", `{"title":"x","title":"y"}`, std+`,"request_id":"r-secret"`), bad, rpcParse, `duplicate member name "request_id"`),
		rpc("meta", "a broken arguments beside a user id of invalid UTF-8", mcpCall("create_ticket", `{"title":"x","title":"y"}`, valid+",\"_aiv_external_user_id\":\"user-\xff\","+rid), bad, rpcParse, "invalid UTF-8"),
		rpc("envelope", "a broken arguments beside a fractional id", bytes.Replace(mcpCall("create_ticket", `{"title":"x","title":"y"}`, std), []byte(`"id":1`), []byte(`"id":1.5`), 1), bad, rpcInvalid, "id must be a string or an integer"),
		rpc("arguments", "arguments that are not JSON", mcpCall("create_ticket", `{"title":}`, std), bad, rpcParse, "invalid JSON at params.arguments"),
		// Not a JSON-RPC request: -32600.
		// Not a JSON-RPC request: the door refuses a batch (2025-03-26, not
		// served) and an id MCP does not allow; the SDK refuses the rest
		// at the transport.
		rpc("envelope", "batch", []byte(`[`+string(call(std))+`]`), bad, rpcInvalid, "batches are not accepted"),
		rpc("envelope", "id null", bytes.Replace(call(std), []byte(`"id":1`), []byte(`"id":null`), 1), bad, rpcInvalid, "id must be a string or an integer"),
		rpc("envelope", "id an object", bytes.Replace(call(std), []byte(`"id":1`), []byte(`"id":{"n":1}`), 1), bad, rpcInvalid, "id must be a string or an integer"),
		rpc("envelope", "id fractional", bytes.Replace(call(std), []byte(`"id":1`), []byte(`"id":1.5`), 1), bad, rpcInvalid, "id must be a string or an integer"),
		plain("envelope", "JSON string", []byte(`"tools/call"`), bad, "malformed payload"),
		plain("envelope", "JSON null", []byte(`null`), bad, "malformed payload"),
		plain("envelope", "jsonrpc 1.0", bytes.Replace(call(std), []byte(`"2.0"`), []byte(`"1.0"`), 1), bad, `expected "2.0"`),
		plain("envelope", "jsonrpc missing", bytes.Replace(call(std), []byte(`"jsonrpc":"2.0",`), nil, 1), bad, `expected "2.0"`),
		plain("envelope", "method a number", bytes.Replace(call(std), []byte(`"method":"tools/call"`), []byte(`"method":7`), 1), bad, "malformed payload"),
		// An id without a method reads as a response to the server: accepted, no answer.
		plain("envelope", "method missing", bytes.Replace(call(std), []byte(`"method":"tools/call",`), nil, 1), http.StatusAccepted, ""),
		plain("envelope", "body past the size limit", mcpCall("create_ticket", `{"title":"x","description":"`+strings.Repeat("d", protocol.MaxBodyBytes)+`"}`, std), http.StatusRequestEntityTooLarge, "request body exceeds 131072 bytes"),
		// Unknown methods: -32601 with the request's id, at every version
		// (from 2026-07-28 in a 404, as the SDK answers).
		rpc("envelope", "unknown method", bytes.Replace(call(std), []byte(`"tools/call"`), []byte(`"tools/delete"`), 1), bad, rpcMethod, "unsupported"),
		rpc("envelope", "method in another case", bytes.Replace(call(std), []byte(`"tools/call"`), []byte(`"Tools/Call"`), 1), bad, rpcMethod, "unsupported"),
		{Name: "unknown method at 2025-06-18", Area: "envelope", Body: []byte(`{"jsonrpc":"2.0","id":"q-7","method":"foo/bar"}`),
			Headers: []Header{{"MCP-Protocol-Version", "2025-06-18"}}, Status: bad, RPCCode: rpcMethod, Fix: `"foo/bar" unsupported`},
		rpc("envelope", "an id on a notification", []byte(`{"jsonrpc":"2.0","id":9,"method":"notifications/initialized"}`), bad, rpcInvalid, "unexpected id"),
		// What the SDK echoes is clipped, and never a nonce.
		rpc("envelope", "a long unknown method", bytes.Replace(call(std), []byte(`"tools/call"`), []byte(`"`+strings.Repeat("m", 30000)+`"`), 1), bad, rpcMethod, "unsupported"),
		rpc("params", "params of the wrong shape beside a nonce and 60 KB", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7,"arguments":{},"_meta":{`+std+`,"pad":"`+strings.Repeat("p", 30000)+`","pad2":"`+strings.Repeat("p", 30000)+`"}}}`), ok, rpcParams, "invalid params"),
		plain("envelope", "jsonrpc a long string", bytes.Replace(call(std), []byte(`"2.0"`), []byte(`"`+strings.Repeat("v", 30000)+`"`), 1), bad, `expected "2.0"`),
		{Name: "unknown method at 2026-07-28", Area: "envelope", Body: bytes.Replace(call(std+`,"io.modelcontextprotocol/protocolVersion":"2026-07-28"`), []byte(`"tools/call"`), []byte(`"tools/delete"`), 1),
			Headers: []Header{{"MCP-Protocol-Version", "2026-07-28"}}, Status: http.StatusNotFound, RPCCode: rpcMethod, Fix: "unsupported"},
		// Params the door cannot map: -32602.
		rpc("params", "params an array", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":["create_ticket"]}`), ok, rpcParams, "invalid params"),
		rpc("params", "tool name missing", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}`), ok, rpcParams, `unknown tool ""`),
		rpc("params", "tool name a number", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":7,"arguments":{}}}`), ok, rpcParams, "invalid params"),
		rpc("params", "tool name too long", mcpCall(strings.Repeat("f", protocol.MaxFunctionNameBytes+1), good, std), ok, rpcParams, "unknown tool"),
		rpc("params", "arguments an array", mcpCall("create_ticket", `[`+good+`]`, std), ok, rpcParams, "params.arguments must be an object"),
		rpc("params", "arguments a string", mcpCall("create_ticket", `"Cannot sign in"`, std), ok, rpcParams, "params.arguments must be an object"),
		tool("arguments", "a string past the limit in the arguments", mcpCall("create_ticket", `{"title":"`+long+`"}`, std), protocol.CodeTooLarge, "params.arguments.title is longer than 32768 bytes"),
		rpc("meta", "_meta an array", []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_ticket","_meta":["r-1"]}}`), ok, rpcParams, "invalid params"),
		rpc("meta", "nonce a number", call(`"_aiv_nonce":9,`+userA+","+rid), ok, rpcParams, "_aiv_nonce must be a string or null"),
		rpc("meta", "nonce an object", call(`"_aiv_nonce":{"hash":"`+n.Valid+`"},`+userA+","+rid), ok, rpcParams, "_aiv_nonce must be a string or null"),
		rpc("meta", "user id a boolean", call(valid+`,"_aiv_external_user_id":true,`+rid), ok, rpcParams, "_aiv_external_user_id must be a string or null"),
		rpc("meta", "user id too long", call(valid+`,"_aiv_external_user_id":"`+strings.Repeat("u", protocol.MaxUserIDBytes+1)+`",`+rid), ok, rpcParams, "longer than 256 bytes"),
		rpc("meta", "request_id a number", call(valid+","+userA+`,"request_id":12345`), ok, rpcParams, "request_id must be a string or null"),
		rpc("meta", "request_id an array", call(valid+","+userA+`,"request_id":["r-1"]`), ok, rpcParams, "request_id must be a string or null"),
		rpc("meta", "request_id past the metadata value limit", call(valid+","+userA+`,"request_id":"`+strings.Repeat("r", protocol.MaxMetadataValueBytes+1)+`"`), ok, rpcParams, "longer than 4096 bytes"),
		rpc("meta", "moment not a date", call(std+`,"_aiv_moment":"yesterday"`), ok, rpcParams, "_aiv_moment must be an ISO 8601 date-time"),
		rpc("meta", "moment a number", call(std+`,"_aiv_moment":1764504000`), ok, rpcParams, "_aiv_moment must be a string or null"),
		rpc("meta", "call source an array", call(std+`,"_aiv_call_source":["McpClient"]`), ok, rpcParams, "_aiv_call_source must be a string or null"),
		rpc("meta", "too many _meta entries", call(many), ok, rpcParams, "the limit is 80"),
		rpc("meta", "a _meta name past the string limit", call(std+`,"`+long+`":"v"`), bad, rpcParse, "longer than 32768 bytes"),
		// Versions.
		{Name: "unsupported protocol version in the header and _meta", Area: "headers", Body: call(std + `,"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"hostile","version":"1"}`),
			Headers: []Header{{"MCP-Protocol-Version", "2099-01-01"}, {"Mcp-Method", "tools/call"}, {"Mcp-Name", "create_ticket"}}, Status: bad, RPCCode: rpcVersion, Fix: "unsupported protocol version"},
		rpc("headers", "a _meta protocol version without the header", call(std+`,"io.modelcontextprotocol/protocolVersion":"2026-07-28"`), bad, rpcHeader, "header is required"),
		{Name: "unsupported MCP-Protocol-Version header", Area: "headers", Body: call(std), Headers: []Header{{"MCP-Protocol-Version", "1999-01-01"}},
			Status: bad, Plain: true, Fix: "Unsupported protocol version"},
		// What the model can correct: isError results.
		tool("arguments", "title empty", mcpCall("create_ticket", `{"title":""}`, std), protocol.CodeInvalidArguments, "title is empty"),
		tool("arguments", "unknown argument", mcpCall("create_ticket", `{"title":"x","assignee":"root"}`, std), protocol.CodeInvalidArguments, `"assignee" is not accepted`),
		tool("arguments", "tenant smuggled into the arguments", mcpCall("create_ticket", `{"title":"x","tenant_id":"tenant-b"}`, std), protocol.CodeInvalidArguments, `"tenant_id" is not accepted`),
		tool("arguments", "huge integer argument", mcpCall("create_ticket", `{"title":"x","n":9007199254740993}`, std), protocol.CodeInvalidArguments, "integer beyond"),
		tool("arguments", "duplicate argument", mcpCall("create_ticket", `{"title":"x","title":"y"}`, std), protocol.CodeInvalidArguments, `duplicate member name "title"`),
		tool("arguments", "number out of range argument", mcpCall("create_ticket", `{"title":"x","n":-1e400}`, std), protocol.CodeInvalidArguments, "number out of range"),
		tool("meta", "request_id missing", call(valid+","+userA), protocol.CodeMissingRequestID, "params._meta.request_id is missing"),
		tool("meta", "request_id null", call(valid+","+userA+`,"request_id":null`), protocol.CodeMissingRequestID, "params._meta.request_id is missing"),
		tool("meta", "request_id only under reserved names", call(valid+","+userA+`,"io.modelcontextprotocol/request_id":"r-1","dev.mcp/request_id":"r-1","_aiv_request_id":"r-1"`), protocol.CodeMissingRequestID, "params._meta.request_id is missing"),
		tool("meta", "request_id with a space", call(valid+","+userA+`,"request_id":"r 1"`), protocol.CodeInvalidRequestID, "visible ASCII characters without spaces"),
		tool("meta", "request_id too long", call(valid+","+userA+`,"request_id":"`+strings.Repeat("r", protocol.MaxRequestIDBytes+1)+`"`), protocol.CodeInvalidRequestID, "longer than 128 bytes"),
		tool("identity", "user id missing", call(valid+","+rid), "missing_user", "params._meta._aiv_external_user_id is missing"),
		tool("identity", "user id null", call(valid+`,"_aiv_external_user_id":null,`+rid), "missing_user", "params._meta._aiv_external_user_id is missing"),
		tool("identity", "user id under context.externalUserId instead", call(valid+`,"externalUserId":"user-a",`+rid), "missing_user", "is missing"),
		rpc("identity", "unknown function", mcpCall("delete_all_tickets", `{}`, std), ok, rpcParams, `unknown tool "delete_all_tickets"`),
		// Credentials and users: HTTP 401/403, nothing disclosed.
		deny("headers", "nonce missing", call(userA+","+rid), http.StatusUnauthorized, "missing_nonce", "_aiv_nonce"),
		deny("headers", "nonce null", call(`"_aiv_nonce":null,`+userA+","+rid), http.StatusUnauthorized, "missing_nonce", "is required"),
		deny("headers", "nonce empty", call(`"_aiv_nonce":"",`+userA+","+rid), http.StatusUnauthorized, "missing_nonce", "is required"),
		deny("headers", "nonce of a wrong key", mcpCall("create_ticket", SecretArgs, `"_aiv_nonce":"`+n.WrongKey+`",`+userA+`,"request_id":"`+SecretRequestID+`"`), http.StatusForbidden, "invalid_nonce", "does not match the hook key"),
		deny("headers", "nonce truncated", call(`"_aiv_nonce":"`+n.Valid[:59]+`",`+userA+","+rid), http.StatusForbidden, "invalid_nonce", "not a BCrypt hash"),
		deny("headers", "nonce of cost 31", call(`"_aiv_nonce":"$2b$31$`+strings.Repeat("A", 53)+`",`+userA+","+rid), http.StatusForbidden, "invalid_nonce", "cost outside 4..9"),
		deny("headers", "nonce is the hook key", call(`"_aiv_nonce":"local-demo-hook-key-0123456789",`+userA+","+rid), http.StatusForbidden, "invalid_nonce", "not a BCrypt hash"),
		{Name: "forged nonce in _meta beside a valid header", Area: "headers", Body: call(`"_aiv_nonce":"` + n.WrongKey + `",` + userA + "," + rid),
			Headers: []Header{{protocol.NonceHeader, n.Valid}}, Status: http.StatusOK, RPCCode: rpcUnauthorized, Code: "invalid_nonce", Fix: "does not match the hook key"},
		deny("identity", "unknown user", secret("mallory", ""), http.StatusForbidden, "unknown_user", "not a user of this service"),
		deny("identity", "user id in another case", secret("USER-A", ""), http.StatusForbidden, "unknown_user", "not a user of this service"),
		deny("identity", "disabled user repeats the operation", secret("user-d", ""), http.StatusForbidden, "user_disabled", "disabled"),
		deny("identity", "user without the function repeats the operation", secret("user-e", ""), http.StatusForbidden, "function_not_granted", "may not call create_ticket"),
		deny("identity", "another user of the tenant reuses the request_id", secret("user-b", ""), http.StatusForbidden, "request_id_conflict", "belongs to another user's operation"),
		deny("identity", "another user of the tenant claims the tenant", secret("user-b", `"tenant_id":"tenant-a",`), http.StatusForbidden, "request_id_conflict", "belongs to another user's operation"),
		// These two run in this order: the first creates tenant-b's own
		// operation, the second is its replay.
		{Name: "another tenant reuses the request_id", Area: "identity", Body: secret("user-c", ""), Status: ok, Writes: 1},
		{Name: "_meta.tenant_id tries to switch tenant", Area: "identity", Body: secret("user-c", `"tenant_id":"tenant-a",`), Status: ok, Deduplicated: true},
		{Name: "get_ticket of another tenant's ticket", Area: "identity",
			Body:   mcpCall("get_ticket", `{"ticket_id":"`+SecretPlaceholder+`"}`, valid+`,"_aiv_external_user_id":"user-c","tenant_id":"tenant-a"`),
			Status: ok, Code: "ticket_not_found", Fix: "Check the ticket_id that create_ticket returned"},
		// The owner's repeat, the nonce in _meta or in a header of any case.
		{Name: "the owner repeats the operation", Area: "headers", Body: secret(Owner, ""), Status: ok, Authorized: true, Deduplicated: true},
		{Name: "the owner repeats it with the nonce in a lower-case header", Area: "headers",
			Body:    mcpCall("create_ticket", SecretArgs, `"_aiv_nonce":null,`+userA+`,"request_id":"`+SecretRequestID+`"`),
			Headers: []Header{{"x-request-nonce", n.Valid}}, Status: ok, Authorized: true, Deduplicated: true},
	}
}

// Check compares one MCP answer with the case: the HTTP status, the
// JSON-RPC error or the tool result, and that nothing of the seeded
// operation leaked to a caller not Authorized. It returns every way the
// answer is wrong.
func (c MCPCase) Check(status int, raw, sent []byte, secret string) []string {
	var body struct {
		JSONRPC string `json:"jsonrpc"`
		Error   *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
			Data    struct {
				Code string `json:"code"`
			} `json:"data"`
		} `json:"error"`
		Result *struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
			StructuredContent *struct {
				Status       string `json:"status"`
				TicketID     string `json:"ticket_id"`
				Deduplicated *bool  `json:"deduplicated"`
			} `json:"structuredContent"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if status != c.Status {
		return []string{fmt.Sprintf("answer %d %.300s, want %d", status, raw, c.Status)}
	}
	if c.Plain {
		if !bytes.Contains(raw, []byte(c.Fix)) || len(raw) > MaxAnswerBytes || bytes.Contains(raw, []byte(secret)) || bytes.Contains(raw, []byte(SecretTitle)) {
			return []string{fmt.Sprintf("answer %d %.300q, want a short transport refusal saying %q", status, raw, c.Fix)}
		}
		return nil
	}
	if err := json.Unmarshal(raw, &body); err != nil || body.JSONRPC != "2.0" {
		return []string{fmt.Sprintf("answer %d is not JSON-RPC: %q", status, raw)}
	}
	var wrong []string
	switch {
	case c.RPCCode != 0:
		switch {
		case body.Error == nil || body.Error.Code != c.RPCCode:
			wrong = append(wrong, fmt.Sprintf("answer %s, want error %d", raw, c.RPCCode))
		case !strings.Contains(body.Error.Message, c.Fix):
			wrong = append(wrong, fmt.Sprintf("message %q does not say %q", body.Error.Message, c.Fix))
		case c.Code != "" && body.Error.Data.Code != c.Code:
			wrong = append(wrong, fmt.Sprintf("answer %s, want data.code %q", raw, c.Code))
		}
		if len(raw) > MaxAnswerBytes {
			wrong = append(wrong, fmt.Sprintf("a refusal of %d bytes; at most %d", len(raw), MaxAnswerBytes))
		}
	case body.Result == nil || len(body.Result.Content) != 1 || body.Result.Content[0].Type != "text":
		wrong = append(wrong, fmt.Sprintf("answer %s, want a tool result with one text block", raw))
	case c.Code != "":
		r := body.Result
		if !r.IsError || !strings.HasPrefix(r.Content[0].Text, c.Code+": ") || !strings.Contains(r.Content[0].Text, c.Fix) || r.StructuredContent != nil {
			wrong = append(wrong, fmt.Sprintf("answer %s, want isError %q saying %q", raw, c.Code, c.Fix))
		}
	default:
		sc := body.Result.StructuredContent
		if body.Result.IsError || sc == nil || sc.Status != protocol.StatusCreated || sc.TicketID == "" || sc.Deduplicated == nil || *sc.Deduplicated != c.Deduplicated {
			wrong = append(wrong, fmt.Sprintf("answer %s, want created with deduplicated %v", raw, c.Deduplicated))
		} else if c.Authorized && sc.TicketID != secret {
			wrong = append(wrong, fmt.Sprintf("the owner's repeat named %s, want the seeded %s", sc.TicketID, secret))
		}
	}
	if !c.Authorized {
		wrong = append(wrong, leaks(raw, sent, secret)...)
	}
	if c.Code != "" || c.RPCCode != 0 || c.Plain {
		if m := nonceLike.Find(raw); m != nil {
			wrong = append(wrong, fmt.Sprintf("the refusal quotes a nonce: %q", m))
		}
	}
	return wrong
}

// nonceLike is a BCrypt hash or the start of one.
var nonceLike = regexp.MustCompile(`\$2[abxy]?\$[0-9]{2}\$`)
