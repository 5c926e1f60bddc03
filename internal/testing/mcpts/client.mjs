// A real second MCP client for oncecall's tests: the official TypeScript
// SDK connects to the URL given, lists the tools, and calls create_ticket
// as an MCP host would, setting _meta.request_id with callTool({name,
// arguments, _meta}). It prints one JSON object of what it saw.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, nonce, requestId] = process.argv.slice(2);
const client = new Client({ name: "oncecall-mcpts", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
await client.connect(transport);

const meta = (extra) => ({ _aiv_nonce: nonce, _aiv_external_user_id: "user-a", _aiv_call_source: "McpClient", ...extra });
const out = {
  protocolVersion: transport.protocolVersion,
  serverName: client.getServerVersion()?.name,
  tools: (await client.listTools()).tools,
  calls: [],
};
for (let i = 0; i < 2; i++) {
  out.calls.push(await client.callTool({ name: "create_ticket", arguments: { title: "Cannot sign in", priority: "high" }, _meta: meta({ request_id: requestId }) }));
}
out.calls.push(await client.callTool({ name: "create_ticket", arguments: { title: "No request id" }, _meta: meta({}) }));
try {
  await client.callTool({ name: "create_ticket", arguments: { title: "Forged" }, _meta: meta({ _aiv_nonce: "forged", request_id: requestId + "-forged" }) });
  out.denied = "";
} catch (e) {
  out.denied = String(e && e.message);
}
await client.close();
process.stdout.write(JSON.stringify(out) + "\n");
