"""The Python SDK's own server (`MCPServer`) with the tool the MCP
benchmark calls, `add`, as tests/mcp/shop.ign declares it: stdio, or
Streamable HTTP (stateless, JSON answers) on 127.0.0.1:PORT with
`python_server.py PORT`."""

import sys

from mcp.server import MCPServer

server = MCPServer("python-add")


@server.tool()
def add(a: int, b: int = 1) -> int:
    """Adds two whole numbers"""
    return a + b


if __name__ == "__main__":
    if len(sys.argv) > 1:
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=int(sys.argv[1]),
            json_response=True,
            stateless_http=True,
        )
    else:
        server.run()
