// Package httpapi is oncecall's one router: an http.Handler that routes
// POST /callback, GET /functions and the MCP door (internal/mcp) on POST
// /mcp, and limits, times and refuses every request the same way whichever
// transport brought it. The local server (cmd/oncecall) serves it over
// net/http; on Lambda, package apigw adapts API Gateway events to it.
package httpapi
