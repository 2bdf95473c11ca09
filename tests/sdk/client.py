"""Official MCP Python SDK client (PyPI `mcp`) against a running `gatehouse serve`.

    python client.py http://127.0.0.1:PORT/mcp

Connects twice over Streamable HTTP:
  - mode="auto": the SDK probes `server/discover`; gatehouse answers 2026-07-28, so the
    negotiated version must be 2026-07-28 (a silent fall back to `initialize` is a failure);
  - mode="legacy": the `initialize` handshake at the SDK's newest handshake-era version.
Each time it lists tools (must include get_server_status) and calls get_server_status (must
not be an error; structuredContent.store_backend must be "sqlite").

Prints one line per mode; exits 0 only if both passed. On a failure it prints every HTTP
exchange the SDK made (request, status, headers, body) so a server deviation can be read off
(on success too when SDK_TRACE is set).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import traceback
from typing import Any

import anyio
import httpx2
import mcp
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import LATEST_HANDSHAKE_VERSION, LATEST_MODERN_VERSION

TIMEOUT_S = 30
BODY_CAP = 2000


class Trace:
    """Every HTTP exchange the SDK makes, for the failure report."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    async def on_request(self, request: httpx2.Request) -> None:
        body = request.content.decode("utf-8", "replace") if request.method == "POST" else ""
        self.lines.append(f"> {request.method} {request.url}")
        for name in ("accept", "content-type", "mcp-protocol-version", "mcp-session-id", "mcp-method", "mcp-name"):
            if name in request.headers:
                self.lines.append(f">   {name}: {request.headers[name]}")
        if body:
            self.lines.append(f">   body: {body[:BODY_CAP]}")

    async def on_response(self, response: httpx2.Response) -> None:
        self.lines.append(f"< {response.status_code} for {response.request.method}")
        for name in ("content-type", "mcp-session-id", "mcp-protocol-version", "allow"):
            if name in response.headers:
                self.lines.append(f"<   {name}: {response.headers[name]}")
        # A POST's body is one bounded reply; a GET may be a long-lived SSE stream, so leave it.
        if response.request.method != "GET":
            await response.aread()
            text = response.content.decode("utf-8", "replace").strip()
            if text:
                self.lines.append(f"<   body: {text[:BODY_CAP]}")


async def check(url: str, mode: str, want_version: str) -> str:
    trace = Trace()
    http = httpx2.AsyncClient(
        # Every request carries the MCP token the script created for this run.
        headers={"Authorization": f"Bearer {os.environ['MCP_TOKEN']}"},
        timeout=httpx2.Timeout(TIMEOUT_S),
        event_hooks={"request": [trace.on_request], "response": [trace.on_response]},
    )
    step = "connect"
    try:
        async with http:
            with anyio.fail_after(TIMEOUT_S):
                async with Client(streamable_http_client(url, http_client=http), mode=mode) as client:
                    version = client.protocol_version
                    if version != want_version:
                        hint = " (the SDK fell back from server/discover to initialize)" if mode == "auto" else ""
                        raise AssertionError(f"negotiated protocol version {version!r}, expected {want_version!r}{hint}")

                    step = "tools/list"
                    listed = await client.list_tools()
                    names = [tool.name for tool in listed.tools]
                    if "get_server_status" not in names:
                        raise AssertionError(f"tools/list has no get_server_status; tools: {names}")

                    step = "tools/call get_server_status"
                    result = await client.call_tool("get_server_status", {})
                    if result.is_error:
                        raise AssertionError(f"isError=true; content: {dump(result.content)}")
                    structured = result.structured_content
                    if not isinstance(structured, dict):
                        raise AssertionError(f"no structuredContent object; result: {dump(result)}")
                    if structured.get("store_backend") != "sqlite":
                        raise AssertionError(
                            f"structuredContent.store_backend is {structured.get('store_backend')!r}, "
                            f"expected 'sqlite'; structuredContent: {dump(structured)}"
                        )
        if os.environ.get("SDK_TRACE"):
            print("\n".join([f"  mode={mode} HTTP exchanges:", *("    " + line for line in trace.lines)]))
        return f"{version}, {len(names)} tools"
    except BaseException as exc:  # noqa: BLE001 - report everything, including timeouts and exception groups
        # The SDK's task groups wrap what went wrong in exception groups: report the leaves.
        detail = "; ".join(
            "".join(traceback.format_exception_only(type(leaf), leaf)).strip() for leaf in leaves(exc)
        )
        http_trace = "\n".join("    " + line for line in trace.lines) or "    (no HTTP exchange)"
        raise Failure(f"mode={mode}: {step} failed: {detail}\n  HTTP exchanges:\n{http_trace}") from None


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaves(sub)]
    return [exc]


def dump(value: Any) -> str:
    if hasattr(value, "model_dump"):
        value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    elif isinstance(value, list):
        value = [v.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(v, "model_dump") else v for v in value]
    return json.dumps(value)[:BODY_CAP]


class Failure(Exception):
    pass


async def main() -> int:
    if len(sys.argv) != 2:
        print("usage: client.py MCP_URL", file=sys.stderr)
        return 2
    url = sys.argv[1]
    sdk = f"mcp {getattr(mcp, '__version__', None) or _dist_version()}"
    failed = 0
    for mode, want in (("auto", LATEST_MODERN_VERSION), ("legacy", LATEST_HANDSHAKE_VERSION)):
        try:
            summary = await check(url, mode, want)
            print(f"python ({sdk}) mode={mode}: ok ({summary})")
        except Failure as f:
            failed += 1
            print(f"python ({sdk}) FAILED {f}")
    return 1 if failed else 0


def _dist_version() -> str:
    from importlib.metadata import version

    return version("mcp")


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
