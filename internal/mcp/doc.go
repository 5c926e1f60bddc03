// Package mcp is oncecall's MCP door: POST /mcp, served by the official MCP
// Go SDK's Streamable HTTP handler (stateless, application/json answers),
// with the two tools of the callback.
//
// The SDK owns the protocol: the JSON-RPC envelope, version negotiation
// (initialize for 2025-06-18 and 2025-11-25, server/discover and
// per-request _meta for 2026-07-28), the transport's header rules, result
// types and caching hints. This package owns what the SDK cannot know:
//
//   - before the SDK, on the HTTP request: the bearer token (a 401 that
//     carries WWW-Authenticate), the Origin allow-list, and a strict parse
//     of the body (duplicate member names, invalid UTF-8, nesting and
//     string limits), which the SDK's decoder accepts and this door must
//     refuse before any field is read;
//   - inside the SDK's tools/call handler: the mapping of params._meta
//     (AIVAX's flat context) to a callback.Call, run through the
//     callback's own pipeline (callback.Handler.Serve), and of its answer
//     to a tool result or a JSON-RPC error a client shows its user;
//   - after the SDK: one log line and metric per request, naming only what
//     was checked.
//
// The same call through the callback and through this door is one
// operation.
package mcp
