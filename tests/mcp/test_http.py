"""`ignite mcp --http` and `ignite serve --mcp`: Streamable HTTP at `/mcp`,
driven by the official Python SDK's client in both protocol eras, and by
raw requests for what a hostile page or client may send."""

import json
import subprocess
import urllib.error
import urllib.request
from contextlib import asynccontextmanager, contextmanager

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import HERE, SHOP, ignite


@contextmanager
def running(*args: str):
    """`ignite ARGS...` until it prints `listening on URL`; the URL of its
    MCP endpoint. The process is stopped (SIGTERM) afterwards and must
    exit 0."""
    process = subprocess.Popen(
        [ignite(), *args],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=HERE,
    )
    url = None
    seen = []
    for line in process.stderr:
        seen.append(line)
        if line.startswith("MCP (Streamable HTTP) at "):
            url = line.removeprefix("MCP (Streamable HTTP) at ").strip()
            break
        if line.startswith("listening on ") and line.strip().endswith("/mcp"):
            url = line.removeprefix("listening on ").strip()
            break
    if url is None:
        process.kill()
        pytest.fail("ignite printed no endpoint:\n" + "".join(seen))
    try:
        yield url
    finally:
        process.terminate()
        rest = process.communicate(timeout=30)
        assert process.returncode == 0, "".join(seen) + rest[1]
        assert rest[0] == "", rest[0]


@asynccontextmanager
async def http_session(url: str, era: str):
    async with streamable_http_client(url) as (read, write):
        async with ClientSession(read, write) as client:
            if era == "handshake":
                await client.initialize()
            else:
                await client.discover()
            yield client


def post(url: str, body: bytes, headers: dict) -> tuple[int, str]:
    request = urllib.request.Request(url, data=body, method="POST")
    request.add_header("Content-Type", "application/json")
    request.add_header("Accept", "application/json, text/event-stream")
    for name, value in headers.items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
).encode()


async def test_the_python_sdk_lists_and_calls_over_http(era):
    with running("mcp", SHOP, "--no-cache", "--http", "127.0.0.1:0") as url:
        async with http_session(url, era) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names == ["add", "quote_item", "nap", "broken", "mark", "Checkout", "Slow", "Marked"]
            result = await client.call_tool("Checkout", {"sku": "tea", "count": 2})
            assert result.structured_content == {
                "quote": {"sku": "tea", "total": 5.0},
                "doubled": 4,
            }
            failed = await client.call_tool("Checkout", {"sku": "tea", "count": 0})
            assert failed.is_error
            assert "node: Checkout > some" in failed.content[0].text


async def test_serve_mounts_the_same_endpoint_beside_the_api(era):
    args = ("serve", SHOP, "--port", "0", "--mcp", "--capabilities", "email_send")
    with running(*args) as url:
        async with http_session(url, era) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert "send_mail" in names and "Notify" in names
            result = await client.call_tool("add", {"a": 41})
            assert result.structured_content == {"result": 42}
        contracts = url.removesuffix("/mcp") + "/contracts"
        with urllib.request.urlopen(contracts, timeout=30) as response:
            listed = [c["name"] for c in json.load(response)]
        assert listed == ["Checkout", "Notify", "Slow", "Marked"]


def test_a_hostile_origin_or_host_is_refused():
    with running("mcp", SHOP, "--http", "127.0.0.1:0") as url:
        status, _ = post(url, INITIALIZE, {"Origin": "https://evil.example"})
        assert status == 403
        port = url.split(":")[2].split("/")[0]
        status, _ = post(url, INITIALIZE, {"Host": f"evil.example:{port}"})
        assert status == 403
        status, body = post(url, INITIALIZE, {"Origin": f"http://localhost:{port}"})
        assert status == 200, body
    allowed = ("--allow-origin", "https://app.example:443", "--allow-host", "tools.example")
    with running("mcp", SHOP, "--http", "127.0.0.1:0", *allowed) as url:
        status, body = post(url, INITIALIZE, {"Origin": "https://app.example"})
        assert status == 200, body
        port = url.split(":")[2].split("/")[0]
        status, body = post(url, INITIALIZE, {"Host": f"tools.example:{port}"})
        assert status == 200, body


def test_a_body_past_the_cap_is_refused():
    with running("mcp", SHOP, "--http", "127.0.0.1:0", "--max-body", "1K") as url:
        huge = json.dumps(
            {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "x" * 4096}}
        ).encode()
        status, _ = post(url, huge, {})
        assert status == 413
        status, body = post(url, INITIALIZE, {})
        assert status == 200, body
