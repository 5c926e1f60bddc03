package hostiletest

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/oncecall/oncecall/internal/nonce"
	"github.com/oncecall/oncecall/internal/protocol"
)

// The operation every catalogue run seeds before the cases: Owner creates a
// ticket with SecretArgs under SecretRequestID. No case but those marked
// Authorized may see its ticket id or its title in an answer.
const (
	Owner           = "user-a"
	SecretRequestID = "r-secret"
	SecretTitle     = "Payroll export shows every salary"
	SecretArgs      = `{"title":"` + SecretTitle + `","priority":"urgent"}`
)

// Header is one request header as sent, name case preserved. A case may list
// the same name twice.
type Header struct{ Name, Value string }

// Case is one hostile or broken callback and the answer it must get.
type Case struct {
	Name string
	// Area is body, arguments, metadata, identity or headers.
	Area string
	Body []byte
	// Headers replaces the default, a valid nonce, when not nil.
	Headers []Header
	// Status is the HTTP status of the answer.
	Status int
	// Outcome is the answer's "status" member.
	Outcome string
	// Code is error.code of a refusal; "" for answers that are not one.
	Code string
	// Fix is a phrase the message must contain: what the caller should
	// change, or, where the caller cannot change anything, what was refused.
	Fix string
	// Writes is how many tickets the call creates (almost always 0).
	Writes int
	// Authorized marks the cases whose caller may see the seeded operation.
	Authorized bool
	// Deduplicated, when Writes is 0 and Outcome is created, says the answer
	// must be a replay.
	Deduplicated bool
}

// Nonces are the header values the catalogue uses.
type Nonces struct {
	// Valid is a BCrypt hash of the hook key the server under test has.
	Valid string
	// WrongKey is a well-formed hash of another key.
	WrongKey string
}

// NewNonces makes the catalogue's nonces for hookKey at cost.
func NewNonces(hookKey string, cost int) (Nonces, error) {
	valid, err := nonce.Generate(hookKey, cost)
	if err != nil {
		return Nonces{}, err
	}
	wrong, err := nonce.Generate("not-"+hookKey, cost)
	return Nonces{Valid: valid, WrongKey: wrong}, err
}

// body is a valid create_ticket callback by user-a; variants edit its text.
const body = `{"type":"tool_call","function":{"name":"create_ticket","content":{"title":"Cannot sign in"}},` +
	`"context":{"externalUserId":"user-a","callSource":"ChatCompletionsApi","conversationToken":"conv-1",` +
	`"moment":"2026-11-30T12:00:00.1234+00:00","metadata":{"request_id":"r-hostile"}}}`

// edit returns s with the first old replaced by new; it panics when old is
// absent so that a case can never silently test the unedited body.
func edit(s, old, replacement string) string {
	if !strings.Contains(s, old) {
		panic(fmt.Sprintf("hostiletest: %q not in %s", old, s))
	}
	return strings.Replace(s, old, replacement, 1)
}

// with applies edits to the valid body, in pairs of old and new.
func with(pairs ...string) []byte {
	s := body
	for i := 0; i+1 < len(pairs); i += 2 {
		s = edit(s, pairs[i], pairs[i+1])
	}
	return []byte(s)
}

// args is the valid body with function.content replaced.
func args(content string) []byte {
	return with(`"content":{"title":"Cannot sign in"}`, `"content":`+content)
}

// metadata is the valid body with context.metadata replaced.
func metadata(md string) []byte {
	return with(`"metadata":{"request_id":"r-hostile"}`, `"metadata":`+md)
}

// secretBody is the seeded operation's exact callback by user.
func secretBody(user string, extraMetadata string) []byte {
	return with(`"content":{"title":"Cannot sign in"}`, `"content":`+SecretArgs,
		`"externalUserId":"user-a"`, `"externalUserId":"`+user+`"`,
		`"metadata":{"request_id":"r-hostile"}`, `"metadata":{`+extraMetadata+`"request_id":"`+SecretRequestID+`"}`)
}

func deep(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }

func manyEntries(n int) string {
	var b strings.Builder
	b.WriteString(`{"request_id":"r-hostile"`)
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, `,"k%d":"v"`, i)
	}
	b.WriteString("}")
	return b.String()
}

const (
	bad    = http.StatusBadRequest
	ok     = http.StatusOK
	denied = http.StatusForbidden
)

// Cases returns the catalogue for a server whose hook key n.Valid hashes.
func Cases(n Nonces) []Case {
	envelope := func(name string, b []byte, fix string) Case {
		return Case{Name: name, Area: "body", Body: b, Status: bad, Outcome: protocol.StatusRejected, Code: protocol.CodeInvalidRequest, Fix: fix}
	}
	meta := func(name string, b []byte, fix string) Case {
		c := envelope(name, b, fix)
		c.Area = "metadata"
		return c
	}
	argument := func(name string, b []byte, fix string) Case {
		return Case{Name: name, Area: "arguments", Body: b, Status: ok, Outcome: protocol.StatusRejected, Code: protocol.CodeInvalidArguments, Fix: fix}
	}
	refused := func(area, name string, b []byte, status int, code, fix string) Case {
		outcome := protocol.StatusRejected
		switch status {
		case http.StatusUnauthorized:
			outcome = protocol.StatusUnauthorized
		case http.StatusForbidden:
			outcome = protocol.StatusForbidden
		}
		return Case{Name: name, Area: area, Body: b, Status: status, Outcome: outcome, Code: code, Fix: fix}
	}
	nonceCase := func(name string, headers []Header, status int, code, fix string) Case {
		c := refused("headers", name, secretBody(Owner, ""), status, code, fix)
		c.Headers = headers
		return c
	}
	hdr := func(v string) []Header { return []Header{{protocol.NonceHeader, v}} }
	longUser := strings.Repeat("u", protocol.MaxUserIDBytes+1)
	longString := strings.Repeat("x", protocol.MaxStringBytes+1)
	huge := strings.Repeat("a", protocol.MaxBodyBytes)
	long := strings.Repeat("m", protocol.MaxStringBytes)

	return []Case{
		// The body: what only the application or AIVAX can fix (400).
		envelope("empty body", nil, "empty input"),
		envelope("whitespace only", []byte(" \r\n\t "), "unexpected end of input"),
		envelope("not JSON", []byte("create a ticket please"), "not acceptable JSON"),
		envelope("form encoded", []byte("type=tool_call&function=create_ticket"), "not acceptable JSON"),
		envelope("JSON array", []byte(`[{"type":"tool_call"}]`), "must be a JSON object"),
		envelope("JSON string", []byte(`"tool_call"`), "must be a JSON object"),
		envelope("JSON null", []byte(`null`), "must be a JSON object"),
		envelope("JSON number", []byte(`42`), "must be a JSON object"),
		envelope("two documents", append(with(), `{}`...), "unexpected data after the JSON value"),
		envelope("byte order mark", append([]byte("\xef\xbb\xbf"), with()...), "unexpected character"),
		envelope("truncated", with()[:60], "not acceptable JSON"),
		envelope("single quotes", []byte(`{'type':'tool_call'}`), "member name in double quotes"),
		envelope("trailing comma", with(`"r-hostile"}}`, `"r-hostile",}}`), "member name in double quotes"),
		envelope("type a number", with(`"type":"tool_call"`, `"type":1`), `type must be the string "tool_call"`),
		envelope("type null", with(`"type":"tool_call"`, `"type":null`), `type must be "tool_call" or absent`),
		envelope("type an array", with(`"type":"tool_call"`, `"type":["tool_call"]`), `type must be the string "tool_call"`),
		envelope("unknown type", with(`"type":"tool_call"`, `"type":"tool_result"`), `only "tool_call"`),
		envelope("type in another case", with(`"type":"tool_call"`, `"type":"TOOL_CALL"`), `only "tool_call"`),
		envelope("function null", with(`"function":{"name":"create_ticket","content":{"title":"Cannot sign in"}}`, `"function":null`), "function must be an object with name and content"),
		envelope("function missing", with(`"function":{"name":"create_ticket","content":{"title":"Cannot sign in"}},`, ``), "function must be an object with name and content"),
		envelope("function a string", with(`"function":{"name":"create_ticket","content":{"title":"Cannot sign in"}}`, `"function":"create_ticket"`), "function must be an object with name and content"),
		envelope("function an array", with(`"function":{"name":"create_ticket","content":{"title":"Cannot sign in"}}`, `"function":[]`), "function must be an object with name and content"),
		envelope("function.name missing", with(`"name":"create_ticket",`, ``), "function.name must be a non-empty string"),
		envelope("function.name null", with(`"name":"create_ticket"`, `"name":null`), "function.name must be a non-empty string"),
		envelope("function.name a number", with(`"name":"create_ticket"`, `"name":7`), "function.name must be a non-empty string"),
		envelope("function.name empty", with(`"name":"create_ticket"`, `"name":""`), "function.name must be a non-empty string"),
		envelope("function.name too long", with(`"name":"create_ticket"`, `"name":"`+strings.Repeat("f", protocol.MaxFunctionNameBytes+1)+`"`), "function.name is longer than 64 bytes"),
		envelope("context a string", with(`"context":{`, `"context":"user-a","x":{`), "context must be an object"),
		envelope("context an array", with(`"context":{`, `"context":[],"x":{`), "context must be an object"),
		envelope("externalUserId a number", with(`"externalUserId":"user-a"`, `"externalUserId":1`), "context.externalUserId must be a string or null"),
		envelope("externalUserId an object", with(`"externalUserId":"user-a"`, `"externalUserId":{"id":"user-a"}`), "context.externalUserId must be a string or null"),
		envelope("externalUserId too long", with(`"externalUserId":"user-a"`, `"externalUserId":"`+longUser+`"`), "context.externalUserId is longer than 256 bytes"),
		envelope("externalUserId invalid UTF-8", with(`"externalUserId":"user-a"`, "\"externalUserId\":\"user-\xff\""), "invalid UTF-8"),
		envelope("externalUserId overlong UTF-8", with(`"externalUserId":"user-a"`, "\"externalUserId\":\"user\xc0\xaf\""), "invalid UTF-8"),
		envelope("externalUserId lone surrogate", with(`"externalUserId":"user-a"`, `"externalUserId":"user-a\ud800"`), "lone high surrogate"),
		envelope("externalUserId raw control character", with(`"externalUserId":"user-a"`, "\"externalUserId\":\"user-a\x01\""), "control character in a string"),
		envelope("callSource a number", with(`"callSource":"ChatCompletionsApi"`, `"callSource":3`), "context.callSource must be a string or null"),
		envelope("conversationToken an array", with(`"conversationToken":"conv-1"`, `"conversationToken":["conv-1"]`), "context.conversationToken must be a string or null"),
		envelope("callSource a boolean", with(`"callSource":"ChatCompletionsApi"`, `"callSource":false`), "context.callSource must be a string or null"),
		envelope("function.name an object", with(`"name":"create_ticket"`, `"name":{"value":"create_ticket"}`), "function.name must be a non-empty string"),
		envelope("conversationToken too long", with(`"conversationToken":"conv-1"`, `"conversationToken":"`+strings.Repeat("c", protocol.MaxTokenBytes+1)+`"`), "context.conversationToken is longer than 1024 bytes"),
		envelope("moment not a date", with(`"moment":"2026-11-30T12:00:00.1234+00:00"`, `"moment":"yesterday"`), "is not an ISO 8601 date-time"),
		envelope("moment a number", with(`"moment":"2026-11-30T12:00:00.1234+00:00"`, `"moment":1764504000`), "context.moment must be a string or null"),
		envelope("duplicate top-level member", with(`"type":"tool_call",`, `"type":"tool_call","type":"tool_call",`), `duplicate member name "type"`),
		envelope("duplicate function", append(with()[:len(with())-1], `,"function":{"name":"get_ticket","content":{}}}`...), `duplicate member name "function"`),
		envelope("duplicate externalUserId", with(`"externalUserId":"user-a"`, `"externalUserId":"user-a","externalUserId":"user-c"`), `duplicate member name "externalUserId"`),
		envelope("duplicate through an escape", with(`"externalUserId":"user-a"`, `"externalUserId":"user-a","\u0065xternalUserId":"user-c"`), `duplicate member name "externalUserId"`),
		envelope("duplicate member with a long name", with(`"type":"tool_call",`, `"`+long+`":1,"`+long+`":2,`), "duplicate member name"),
		envelope("nesting past the limit outside the arguments", with(`"callSource":"ChatCompletionsApi"`, `"extra":`+deep(protocol.MaxDepth)), "nesting deeper than 64 levels"),
		envelope("number out of range outside the arguments", with(`"type":"tool_call",`, `"type":"tool_call","version":1e999,`), "number out of range"),
		{Name: "body past the size limit", Area: "body", Body: args(`{"title":"x","description":"` + huge + `"}`),
			Status: ok, Outcome: protocol.StatusRejected, Code: protocol.CodeTooLarge, Fix: "longer than the limit of 131072 bytes"},
		{Name: "body past the size limit and not JSON", Area: "body", Body: []byte(huge + huge),
			Status: ok, Outcome: protocol.StatusRejected, Code: protocol.CodeTooLarge, Fix: "longer than the limit of 131072 bytes"},

		// context.metadata (400: the application sets it).
		meta("metadata an array", metadata(`["r-hostile"]`), "context.metadata must be an object of strings"),
		meta("metadata a string", metadata(`"r-hostile"`), "context.metadata must be an object of strings"),
		meta("request_id a number", metadata(`{"request_id":12345}`), "context.metadata.request_id must be a string, not a number"),
		meta("request_id null", metadata(`{"request_id":null}`), "context.metadata.request_id must be a string, not null"),
		meta("request_id an object", metadata(`{"request_id":{"id":"r-1"}}`), "context.metadata.request_id must be a string, not an object"),
		meta("metadata value a boolean", metadata(`{"request_id":"r-hostile","urgent":true}`), "context.metadata.urgent must be a string, not a boolean"),
		meta("metadata value an array", metadata(`{"request_id":"r-hostile","tags":["a"]}`), "context.metadata.tags must be a string, not an array"),
		meta("metadata value a huge number", metadata(`{"request_id":"r-hostile","n":123456789012345678901234567890}`), "integer beyond"),
		meta("metadata too many entries", metadata(manyEntries(protocol.MaxMetadataEntries+1)), "the limit is 64"),
		meta("metadata value too long", metadata(`{"request_id":"r-hostile","note":"`+strings.Repeat("n", protocol.MaxMetadataValueBytes+1)+`"}`), "longer than 4096 bytes"),
		meta("duplicate request_id", metadata(`{"request_id":"r-hostile","request_id":"r-secret"}`), `duplicate member name "request_id"`),
		meta("request_id with a lone surrogate", metadata(`{"request_id":"r-\udc00"}`), "lone low surrogate"),
		refused("metadata", "request_id missing", metadata(`{}`), ok, "missing_request_id", "must mint one request_id per operation"),
		refused("metadata", "request_id empty", metadata(`{"request_id":""}`), ok, "missing_request_id", "must mint one request_id per operation"),
		refused("metadata", "metadata null", metadata(`null`), ok, "missing_request_id", "must mint one request_id per operation"),
		refused("metadata", "request_id with a space", metadata(`{"request_id":"r 1"}`), ok, "invalid_request_id", "visible ASCII characters without spaces"),
		refused("metadata", "request_id not ASCII", metadata(`{"request_id":"r-é"}`), ok, "invalid_request_id", "visible ASCII characters without spaces"),
		refused("metadata", "request_id with a NUL", metadata(`{"request_id":"r-\u0000"}`), ok, "invalid_request_id", "visible ASCII characters without spaces"),
		refused("metadata", "request_id too long", metadata(`{"request_id":"`+strings.Repeat("r", protocol.MaxRequestIDBytes+1)+`"}`), ok, "invalid_request_id", "longer than 128 bytes"),

		// function.content: the model wrote it and can correct it (200).
		argument("content a string", args(`"Cannot sign in"`), "must be a JSON object of named arguments, not a string"),
		argument("content an array", args(`[{"title":"Cannot sign in"}]`), "must be a JSON object of named arguments, not an array"),
		argument("content a number", args(`1`), "must be a JSON object of named arguments, not a number"),
		argument("content null", args(`null`), "send the arguments as a JSON object"),
		argument("content missing", with(`,"content":{"title":"Cannot sign in"}`, ``), "title is required"),
		argument("content empty", args(`{}`), "title is required"),
		argument("title a number", args(`{"title":404}`), "title must be a string, not a number"),
		argument("title null", args(`{"title":null}`), "title is required"),
		argument("title a boolean", args(`{"title":true}`), "title must be a string, not a boolean"),
		argument("title empty", args(`{"title":""}`), "title is empty"),
		argument("title too long", args(`{"title":"`+strings.Repeat("t", 201)+`"}`), "shorten it to at most 200"),
		{Name: "title past the string limit", Area: "arguments", Body: args(`{"title":"` + longString + `"}`),
			Status: ok, Outcome: protocol.StatusRejected, Code: protocol.CodeTooLarge, Fix: "function.content.title is longer than 32768 bytes"},
		argument("title with a line break", args(`{"title":"Cannot\nsign in"}`), "must be a single line"),
		argument("title with a lone high surrogate", args(`{"title":"Cannot sign in \ud83d"}`), "lone high surrogate"),
		argument("title with a lone low surrogate", args(`{"title":"\ude00 Cannot sign in"}`), "lone low surrogate"),
		argument("title with invalid UTF-8", args("{\"title\":\"Cannot sign in \xe2\x28\xa1\"}"), "invalid UTF-8"),
		argument("description an array", args(`{"title":"x","description":["a"]}`), "description must be a string, not an array"),
		argument("description too long", args(`{"title":"x","description":"`+strings.Repeat("d", 8001)+`"}`), "shorten it to at most 8000"),
		argument("description with a control character", args(`{"title":"x","description":"a\u0007b"}`), "contains a control character"),
		argument("priority a number", args(`{"title":"x","priority":1}`), "priority must be a string, not a number"),
		argument("priority unknown", args(`{"title":"x","priority":"asap"}`), `is not one of "low", "normal", "high", "urgent"`),
		argument("tags a string", args(`{"title":"x","tags":"hw"}`), "tags must be an array of strings, not a string"),
		argument("tags with a number", args(`{"title":"x","tags":[1]}`), "tags[0] must be a string, not a number"),
		argument("tags too many", args(`{"title":"x","tags":["1","2","3","4","5","6","7","8","9","10","11"]}`), "send at most 10"),
		argument("tags repeated", args(`{"title":"x","tags":["hw","hw"]}`), `tags[1] repeats "hw"`),
		argument("tag empty", args(`{"title":"x","tags":[""]}`), "tags[0] is empty"),
		argument("unknown argument", args(`{"title":"x","assignee":"root"}`), `"assignee" is not accepted`),
		argument("tenant smuggled into the arguments", args(`{"title":"x","tenant_id":"tenant-b"}`), `"tenant_id" is not accepted`),
		argument("duplicate argument", args(`{"title":"x","title":"y"}`), `duplicate member name "title"`),
		argument("duplicate deep in the arguments", args(`{"title":"x","extra":[{"a":{"b":1,"b":2}}]}`), `duplicate member name "b"`),
		argument("invalid value under long member names", args(`{"title":"x","`+long+`":{"`+long+`":1e999}}`), "number out of range"),
		argument("huge integer argument", args(`{"title":"x","n":9007199254740993}`), "integer beyond"),
		argument("number out of range argument", args(`{"title":"x","n":-1e400}`), "number out of range"),
		argument("number literal too long", args(`{"title":"x","n":0.`+strings.Repeat("1", protocol.MaxNumberLength)+`}`), "number literal longer than 40 characters"),
		argument("nesting past the limit in the arguments", args(`{"title":"x","n":`+deep(protocol.MaxDepth)+`}`), "nesting deeper than 64 levels"),

		// Identity and authorization.
		refused("identity", "externalUserId missing", with(`"externalUserId":"user-a",`, ``), ok, "missing_user", "must send the end user's id"),
		refused("identity", "externalUserId null", with(`"externalUserId":"user-a"`, `"externalUserId":null`), ok, "missing_user", "must send the end user's id"),
		refused("identity", "externalUserId empty", with(`"externalUserId":"user-a"`, `"externalUserId":""`), ok, "missing_user", "must send the end user's id"),
		refused("identity", "context missing", with(`,"context":{`, `,"x":{`), ok, "missing_user", "must send the end user's id"),
		refused("identity", "unknown user", secretBody("mallory", ""), denied, "unknown_user", "not a user of this service"),
		refused("identity", "user id in another case", secretBody("USER-A", ""), denied, "unknown_user", "not a user of this service"),
		refused("identity", "user id padded", secretBody(" user-a", ""), denied, "unknown_user", "not a user of this service"),
		refused("identity", "user id naming a key", secretBody("user#user-a", ""), denied, "unknown_user", "not a user of this service"),
		refused("identity", "disabled user repeats the operation", secretBody("user-d", ""), denied, "user_disabled", "disabled"),
		refused("identity", "user without the function repeats the operation", secretBody("user-e", ""), denied, "function_not_granted", "may not call create_ticket"),
		refused("identity", "unknown function", with(`"name":"create_ticket"`, `"name":"delete_all_tickets"`), ok, "unknown_function", "The functions are create_ticket, get_ticket"),
		refused("identity", "function name in another case", with(`"name":"create_ticket"`, `"name":"Create_Ticket"`), ok, "unknown_function", "The functions are create_ticket, get_ticket"),
		refused("identity", "function name with a NUL", with(`"name":"create_ticket"`, `"name":"create_ticket\u0000"`), ok, "unknown_function", "The functions are create_ticket, get_ticket"),
		refused("identity", "another user of the tenant reuses the request_id", secretBody("user-b", ""), denied, "request_id_conflict", "belongs to another user's operation"),
		refused("identity", "another user of the tenant claims the tenant", secretBody("user-b", `"tenant_id":"tenant-a",`), denied, "request_id_conflict", "belongs to another user's operation"),
		// These two run in this order: the first creates tenant-b's own
		// operation, the second is its replay.
		{Name: "another tenant reuses the request_id", Area: "identity", Body: secretBody("user-c", ""),
			Status: ok, Outcome: protocol.StatusCreated, Writes: 1},
		{Name: "metadata.tenant_id tries to switch tenant", Area: "identity", Body: secretBody("user-c", `"tenant_id":"tenant-a",`),
			Status: ok, Outcome: protocol.StatusCreated, Deduplicated: true},
		{Name: "metadata.tenant_id on a read of another tenant's ticket", Area: "identity",
			Body:   []byte(`{"function":{"name":"get_ticket","content":{"ticket_id":"@SECRET@"}},"context":{"externalUserId":"user-c","metadata":{"tenant_id":"tenant-a"}}}`),
			Status: ok, Outcome: protocol.StatusNotFound, Code: "ticket_not_found", Fix: "Check the ticket_id that create_ticket returned"},

		// Headers and the nonce. Every one of them repeats the seeded
		// operation, so a refusal that leaked it would show.
		nonceCase("nonce missing", []Header{}, http.StatusUnauthorized, "missing_nonce", "X-Request-Nonce header is required"),
		nonceCase("nonce empty", hdr(""), http.StatusUnauthorized, "missing_nonce", "X-Request-Nonce header is required"),
		nonceCase("nonce under another header", []Header{{"X-Request-Nonces", n.Valid}}, http.StatusUnauthorized, "missing_nonce", "X-Request-Nonce header is required"),
		nonceCase("nonce truncated", hdr(n.Valid[:nonce.HashLength-1]), denied, "invalid_nonce", "not a BCrypt hash"),
		nonceCase("nonce extended", hdr(n.Valid+"A"), denied, "invalid_nonce", "not a BCrypt hash"),
		nonceCase("nonce is the hook key", hdr("local-demo-hook-key-0123456789"), denied, "invalid_nonce", "not a BCrypt hash"),
		nonceCase("nonce plain text of hash length", hdr(strings.Repeat("n", nonce.HashLength)), denied, "invalid_nonce", "not a BCrypt hash"),
		nonceCase("nonce of an unknown variant", hdr("$2x$"+n.Valid[4:]), denied, "invalid_nonce", "not a BCrypt hash"),
		nonceCase("nonce with a bad salt alphabet", hdr(n.Valid[:10]+"!"+n.Valid[11:]), denied, "invalid_nonce", "not a BCrypt hash"),
		nonceCase("nonce of a wrong key", hdr(n.WrongKey), denied, "invalid_nonce", "does not match the hook key"),
		nonceCase("nonce of cost 31", hdr("$2b$31$"+strings.Repeat("A", 53)), denied, "invalid_nonce", "cost outside 4..9"),
		nonceCase("nonce of cost 10, one above AIVAX", hdr("$2b$10$"+n.Valid[7:]), denied, "invalid_nonce", "cost outside 4..9"),
		nonceCase("nonce of cost 03", hdr("$2b$03$"+n.Valid[7:]), denied, "invalid_nonce", "cost outside 4..9"),
		nonceCase("nonce of one megabyte", hdr(strings.Repeat("$2b$09$", (1<<20)/7)), denied, "invalid_nonce", "not a BCrypt hash"),
		nonceCase("nonce twice, the second forged", []Header{{protocol.NonceHeader, n.Valid}, {protocol.NonceHeader, n.WrongKey}}, denied, "invalid_nonce", "not a BCrypt hash"),
		nonceCase("nonce twice, the first forged", []Header{{protocol.NonceHeader, n.WrongKey}, {protocol.NonceHeader, n.Valid}}, denied, "invalid_nonce", "not a BCrypt hash"),
		{Name: "nonce header in lower case", Area: "headers", Body: secretBody(Owner, ""), Headers: []Header{{"x-request-nonce", n.Valid}},
			Status: ok, Outcome: protocol.StatusCreated, Authorized: true, Deduplicated: true},
		{Name: "nonce header in upper case", Area: "headers", Body: secretBody(Owner, ""), Headers: []Header{{"X-REQUEST-NONCE", n.Valid}},
			Status: ok, Outcome: protocol.StatusCreated, Authorized: true, Deduplicated: true},
		{Name: "nonce header in mixed case", Area: "headers", Body: secretBody(Owner, ""), Headers: []Header{{"x-ReQuEsT-nOnCe", n.Valid}},
			Status: ok, Outcome: protocol.StatusCreated, Authorized: true, Deduplicated: true},
	}
}

// SecretPlaceholder in a case's body stands for the seeded ticket's id.
const SecretPlaceholder = "@SECRET@"
