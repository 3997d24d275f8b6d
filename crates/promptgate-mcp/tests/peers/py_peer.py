"""A small MCP server built on the Python SDK, for the promptgate-mcp tests.

Usage: python py_peer.py PORT  (serves streamable HTTP on 127.0.0.1:PORT/mcp)
"""

import sys

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("promptgate-py-peer")


@server.tool(
    title="Echo",
    annotations=ToolAnnotations(readOnlyHint=True, idempotentHint=True, openWorldHint=False),
)
def echo(message: str) -> str:
    """Return the message with a prefix."""
    return f"py-echo: {message}"


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
