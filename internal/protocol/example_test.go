package protocol_test

import (
	"errors"
	"fmt"

	"github.com/oncecall/oncecall/internal/protocol"
)

// Decode reads an AIVAX Protocol Function callback body. The application's
// operation id travels in the context's metadata as request_id.
func ExampleDecode() {
	req, err := protocol.Decode([]byte(`{
		"type": "tool_call",
		"function": {"name": "create_ticket", "content": {"title": "Cannot sign in"}},
		"context": {"externalUserId": "user-a", "metadata": {"request_id": "op-7"}}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	rid, err := req.RequestID()
	fmt.Println(req.Function, req.Arguments["title"], req.ExternalUserID, rid, err)
	// Output:
	// create_ticket Cannot sign in user-a op-7 <nil>
}

// A body Decode refuses comes with a *RequestError: the HTTP status, a
// stable code and a message that says what to fix. Arguments the model
// wrote are refused with 200, so that the model sees what to correct.
func ExampleDecode_refused() {
	_, err := protocol.Decode([]byte(`{"function": {"name": "create_ticket", "content": ["Cannot sign in"]}}`))
	var re *protocol.RequestError
	if errors.As(err, &re) {
		fmt.Println(re.Status, re.Code)
		fmt.Println(re.Message)
		fmt.Println(string(protocol.Refuse(re).Body()))
	}
	// Output:
	// 200 invalid_arguments
	// function.content must be a JSON object of named arguments, not an array
	// {"status":"rejected","error":{"code":"invalid_arguments","message":"function.content must be a JSON object of named arguments, not an array"}}
}
