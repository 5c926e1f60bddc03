package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/oncecall/oncecall/internal/canonjson"
	"github.com/oncecall/oncecall/internal/protocol"
)

// message is one decoded JSON-RPC message.
type message struct {
	// id is the request's id as sent; nil for a notification.
	id json.RawMessage
	// method is "" for a response the client sent.
	method string
	params map[string]any
	// meta is params._meta; never nil.
	meta map[string]any
}

func (m *message) notification() bool { return m.id == nil }

// decode reads one JSON-RPC message within the callback's body limits. It
// answers what it refuses, with the code it logs: -32700 for what is not
// JSON, -32600 for what is not a JSON-RPC request, -32602 for params that
// are not an object. code is "" for a message it accepts.
func decode(body []byte) (m *message, res Response, code string) {
	if len(body) > protocol.MaxBodyBytes {
		return nil, rpcError(http.StatusBadRequest, nil, CodeInvalidRequest, fmt.Sprintf(
			"the request body is longer than the limit of %d bytes; send shorter arguments", protocol.MaxBodyBytes), nil), codeInvalidRequest
	}
	doc, err := canonjson.Parse(body, canonjson.Limits{
		MaxDepth:        protocol.MaxDepth,
		MaxStringBytes:  protocol.MaxStringBytes,
		MaxNumberLength: protocol.MaxNumberLength,
	})
	if err != nil {
		var se *canonjson.Error
		if errors.As(err, &se) {
			// Valid JSON-RPC around an unacceptable value: answer the
			// request. In the arguments the model can correct it, as the
			// callback says of function.content.
			var raw struct {
				ID json.RawMessage `json:"id"`
			}
			if json.Unmarshal(body, &raw) == nil && validID(raw.ID) {
				if underArguments(se.Path) {
					p := &protocol.Problem{Status: http.StatusOK, Code: protocol.CodeInvalidArguments, Message: fmt.Sprintf(
						"the arguments are not valid: %s. Send the arguments as one JSON object with unique member names.", clipPath(se.Error()))}
					if errors.Is(err, canonjson.ErrTooLong) {
						p.Code, p.Message = protocol.CodeTooLarge, fmt.Sprintf(
							"a string in %s is longer than %d bytes, the limit for any string. Shorten it and call again.", clipPath(se.Path), protocol.MaxStringBytes)
					}
					return nil, toResult(raw.ID, protocol.Refuse(p)), codeInvalidArguments
				}
				if errors.Is(err, canonjson.ErrTooLong) {
					return nil, rpcError(http.StatusOK, raw.ID, CodeInvalidParams, fmt.Sprintf(
						"a string at %s is longer than %d bytes, the limit for any string; shorten it", clipPath(se.Path), protocol.MaxStringBytes), nil), codeInvalidParams
				}
			}
		}
		return nil, rpcError(http.StatusBadRequest, nil, CodeParseError, "parse error: "+clipPath(err.Error()), nil), codeParse
	}
	root, ok := doc.(map[string]any)
	if !ok {
		if _, batch := doc.([]any); batch {
			return nil, rpcError(http.StatusBadRequest, nil, CodeInvalidRequest, "JSON-RPC batches are not accepted; send one request per POST", nil), codeInvalidRequest
		}
		return nil, rpcError(http.StatusBadRequest, nil, CodeInvalidRequest, "the body must be one JSON-RPC request object: {\"jsonrpc\":\"2.0\",\"id\":…,\"method\":…}", nil), codeInvalidRequest
	}
	var raw struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, rpcError(http.StatusBadRequest, nil, CodeParseError, "parse error: "+clipPath(err.Error()), nil), codeParse
	}
	m = &message{}
	if _, present := root["id"]; present {
		if !validID(raw.ID) {
			return nil, rpcError(http.StatusBadRequest, nil, CodeInvalidRequest, "id must be a string or an integer", nil), codeInvalidRequest
		}
		m.id = raw.ID
	}
	if v, _ := root["jsonrpc"].(string); v != "2.0" {
		return nil, rpcError(http.StatusBadRequest, m.id, CodeInvalidRequest, `jsonrpc must be "2.0": send {"jsonrpc":"2.0",…}`, nil), codeInvalidRequest
	}
	method, present := root["method"]
	if !present {
		_, isResult := root["result"]
		_, isError := root["error"]
		if m.id != nil && (isResult || isError) {
			// A response to a request this server never sends: accepted.
			return &message{}, Response{}, ""
		}
		return nil, rpcError(http.StatusBadRequest, m.id, CodeInvalidRequest, "method is required: send one JSON-RPC request, such as tools/call", nil), codeInvalidRequest
	}
	if m.method, ok = method.(string); !ok || m.method == "" {
		return nil, rpcError(http.StatusBadRequest, m.id, CodeInvalidRequest, "method must be a non-empty string", nil), codeInvalidRequest
	}
	switch p := root["params"].(type) {
	case nil:
		m.params = map[string]any{}
	case map[string]any:
		m.params = p
	default:
		return nil, rpcError(http.StatusOK, m.id, CodeInvalidParams, "params must be an object, such as {\"name\":\"create_ticket\",\"arguments\":{}}", nil), codeInvalidParams
	}
	switch meta := m.params["_meta"].(type) {
	case nil:
		m.meta = map[string]any{}
	case map[string]any:
		m.meta = meta
	default:
		return nil, rpcError(http.StatusOK, m.id, CodeInvalidParams, "params._meta must be an object of named values", nil), codeInvalidParams
	}
	return m, Response{}, ""
}

// argumentsPath is where a tools/call carries the arguments.
const argumentsPath = "params.arguments"

func underArguments(path string) bool {
	return path == argumentsPath || strings.HasPrefix(path, argumentsPath+".") || strings.HasPrefix(path, argumentsPath+"[")
}

// validID reports whether raw is a JSON-RPC id MCP accepts: a string or
// an integer, never null.
func validID(raw json.RawMessage) bool {
	if len(raw) == 0 {
		return false
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&v) != nil {
		return false
	}
	switch x := v.(type) {
	case string:
		return true
	case json.Number:
		_, err := x.Int64()
		return err == nil
	}
	return false
}

// clipPath shortens what a parse error quotes: a hostile member name of
// many kilobytes is not echoed back.
func clipPath(s string) string {
	const max = 240
	if len(s) <= max {
		return s
	}
	return strings.ToValidUTF8(s[:max], "") + "…"
}

type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// nullID is the id of an error answering a request whose id is unknown.
var nullID = json.RawMessage("null")

// rpcError is a JSON-RPC error response with the given HTTP status.
func rpcError(status int, id json.RawMessage, code int, msg string, data any) Response {
	if id == nil {
		id = nullID
	}
	return encode(status, struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   rpcErr          `json:"error"`
	}{"2.0", id, rpcErr{code, msg, data}})
}

// result is a JSON-RPC success response.
func result(id json.RawMessage, v any) Response {
	return encode(http.StatusOK, struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  any             `json:"result"`
	}{"2.0", id, v})
}

// internalBody answers when encoding fails, which the types here never do.
var internalBody = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)

func encode(status int, v any) Response {
	b, err := json.Marshal(v)
	if err != nil {
		return Response{Status: http.StatusInternalServerError, Body: internalBody}
	}
	return Response{Status: status, Body: b}
}
