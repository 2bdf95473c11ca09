# The Python SDK peer for tests/bench/peers.sh: MCPServer (FastMCP in mcp 1.x) with one read
# tool returning a fixed 1 KB JSON, stateless Streamable HTTP with JSON responses, on uvicorn.
import sys

from mcp.server.mcpserver import MCPServer

PAYLOAD = {"payload": "x" * 1024}
server = MCPServer("bench", log_level="WARNING")


@server.tool(name="bench_fixed_1kb", description="Returns a fixed 1 KB payload.")
def bench_fixed_1kb() -> dict:
    return PAYLOAD


server.run(
    "streamable-http",
    host="127.0.0.1",
    port=int(sys.argv[1]),
    json_response=True,
    stateless_http=True,
)
