"""A real MCP client for oncecall's tests: the official Python SDK (PyPI mcp).

It connects twice to the URL given, once with the SDK's default Client()
(mode auto: server/discover, then the revision the server offers) and once
with a ClientSession over the Streamable HTTP transport (the initialize
flow); each lists the tools, calls create_ticket twice under one
_meta.request_id, once without one, and once with a forged nonce. It
prints one JSON object per connection of what it saw.
"""

import asyncio
import json
import sys

from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

URL, NONCE, REQUEST_ID = sys.argv[1:4]


def meta(**extra):
    m = {"_aiv_nonce": NONCE, "_aiv_external_user_id": "user-a", "_aiv_call_source": "McpClient"}
    m.update(extra)
    return m


def result(r):
    return r.model_dump(mode="json", by_alias=True, exclude_none=True)


async def exercise(call_tool, list_tools, tag):
    out = {"tools": [result(t) for t in (await list_tools()).tools], "calls": [], "denied": ""}
    args = {"title": "Cannot sign in", "priority": "high"}
    for _ in range(2):
        out["calls"].append(result(await call_tool("create_ticket", args, meta=meta(request_id=REQUEST_ID + "-" + tag))))
    out["calls"].append(result(await call_tool("create_ticket", {"title": "No request id"}, meta=meta())))
    try:
        await call_tool("create_ticket", {"title": "Forged"}, meta=meta(_aiv_nonce="forged", request_id=REQUEST_ID + "-forged"))
    except MCPError as e:
        out["denied"] = str(e)
    return out


async def default_client():
    async with Client(URL) as client:
        out = await exercise(client.call_tool, client.list_tools, "client")
        out["connection"] = "Client()"
        out["protocolVersion"] = client.protocol_version
        out["serverName"] = client.server_info.name if client.server_info else ""
        return out


async def client_session():
    async with streamable_http_client(URL) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            init = await session.initialize()
            out = await exercise(session.call_tool, session.list_tools, "session")
            out["connection"] = "ClientSession"
            out["protocolVersion"] = init.protocol_version
            out["serverName"] = init.server_info.name
            return out


async def main():
    for run in (default_client, client_session):
        print(json.dumps(await run()), flush=True)


asyncio.run(main())
