// Package mcpts drives oncecall's MCP door with a second real client, the
// official TypeScript SDK (@modelcontextprotocol/sdk, pinned by
// package-lock.json): its test installs the SDK with npm ci into .tools/,
// serves the local server (internal/httpapi over a fresh store), and runs
// client.mjs under node against it.
package mcpts
