// Package httpapi serves a callback.Handler over net/http: POST /callback,
// GET /functions, and the MCP door (internal/mcp) on POST /mcp. It is the
// transport of the local server (cmd/oncecall) and of the end-to-end tests.
package httpapi
