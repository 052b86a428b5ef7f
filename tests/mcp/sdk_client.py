"""Drives the MCP endpoint with the official MCP Python SDK (tests/api/mcp.rs).

Usage: sdk_client.py MCP_URL TOKEN CALLS_JSON
CALLS_JSON is a list of [tool name, arguments]. Connects with the streamable
HTTP client, initializes, lists the tools, resources and resource templates,
reads the schema resource, calls each tool in order (the SDK checks each
result's structuredContent against the tool's outputSchema), and prints one
JSON summary line.
"""

import asyncio
import json
import sys

from mcp import ClientSession
from mcp.client.streamable_http import streamablehttp_client


async def main(url: str, token: str, calls: list) -> dict:
    headers = {"Authorization": f"Bearer {token}"}
    async with streamablehttp_client(url, headers=headers) as (read, write, _session_id):
        async with ClientSession(read, write) as session:
            initialized = await session.initialize()
            tools = await session.list_tools()
            resources = await session.list_resources()
            templates = await session.list_resource_templates()
            schema = await session.read_resource(resources.resources[0].uri)
            results = []
            for name, arguments in calls:
                result = await session.call_tool(name, arguments)
                text = "".join(part.text for part in result.content if part.type == "text")
                results.append(
                    {
                        "tool": name,
                        "isError": result.isError,
                        "answer": json.loads(text),
                        "structured": result.structuredContent,
                    }
                )
            await session.send_ping()
    return {
        "protocolVersion": initialized.protocolVersion,
        "server": initialized.serverInfo.name,
        "instructions": bool(initialized.instructions),
        "tools": [tool.name for tool in tools.tools],
        "resources": [str(resource.uri) for resource in resources.resources],
        "templates": [template.uriTemplate for template in templates.resourceTemplates],
        "schema": json.loads(schema.contents[0].text),
        "calls": results,
    }


if __name__ == "__main__":
    summary = asyncio.run(main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3])))
    print(json.dumps(summary))
