// Package protocol is the contract every door of oncecall shares with its
// callers: the AIVAX Protocol Function callback body (Decode, with the
// limits it enforces while reading it), the names and rules the doors
// agree on (NonceHeader, the request id rule of CheckRequestID), and the
// answers (Answer: the status values, refusal codes and JSON bodies that
// the HTTP callback, API Gateway and the MCP door's tools/call all return).
//
// Decode reads a callback body strictly. Its errors are *RequestError
// values: problems with the envelope, which only the application or AIVAX
// can fix, have HTTP status 400; problems inside function.content, which
// the model wrote and can correct, have status 200 so that the model sees
// them.
package protocol
