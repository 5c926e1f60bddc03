// Package mcp is oncecall's MCP door: a stateless Streamable HTTP server
// answering application/json on POST /mcp, with initialize, ping,
// tools/list and tools/call (protocol versions 2025-06-18 and 2025-11-25,
// and 2026-07-28 requests that carry their version in _meta).
//
// It is a thin adapter. tools/list is built from the handler's function
// definitions, the ones the validator and GET /functions use; tools/call
// maps the envelope to a callback.Call, runs the callback's own pipeline
// through callback.Handler.Serve, and maps the answer to a tool result. The
// same call through the callback and through this door is one operation.
//
// The JSON-RPC surface is written here rather than taken from the MCP Go
// SDK's server: the SDK's handler owns the http.Handler and a session per
// request, validates arguments with its own schema engine, and cannot
// answer a tool call with HTTP 401 or 403 from inside the pipeline.
package mcp
