"""`ignite mcp --http` and `ignite serve --mcp`: Streamable HTTP at `/mcp`,
driven by the official Python SDK's client in both protocol eras, and by
raw requests for what a hostile page or client may send."""

import json
import subprocess
import threading
import time
import urllib.error
import urllib.request
from contextlib import asynccontextmanager, contextmanager

import anyio
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from conftest import HERE, SHOP, ignite


@contextmanager
def running(*args: str):
    """`ignite ARGS...` until it prints `listening on URL`; the URL of its
    MCP endpoint. The process is stopped (SIGTERM) afterwards and must
    exit 0."""
    process, url, seen = start(*args)
    try:
        yield url
    finally:
        process.terminate()
        rest = process.communicate(timeout=30)
        assert process.returncode == 0, "".join(seen) + rest[1]
        assert rest[0] == "", rest[0]


def start(*args: str) -> tuple[subprocess.Popen, str, list[str]]:
    """`ignite ARGS...` started, once it printed its MCP endpoint: the
    process, the endpoint's URL and the stderr lines read so far."""
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
    return process, url, seen


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


async def test_serve_gives_each_mcp_call_a_turn_of_max_runs(era):
    with running("serve", SHOP, "--port", "0", "--mcp", "--max-runs", "1") as url:
        health = url.removesuffix("/mcp") + "/health"
        answers = []
        async with http_session(url, era) as client:

            async def nap():
                answers.append(await client.call_tool("nap", {"seconds": 1}))

            started = time.monotonic()
            async with anyio.create_task_group() as group:
                group.start_soon(nap)
                group.start_soon(nap)
                await anyio.sleep(0.5)
                with urllib.request.urlopen(health, timeout=30) as response:
                    assert json.load(response)["running"] == 1
            took = time.monotonic() - started
        # One turn: the second call waited for the first.
        assert took >= 2, took
        assert [a.structured_content for a in answers] == [{"result": "rested"}] * 2


def test_serve_waits_for_mcp_calls_in_flight_at_shutdown():
    # Raw requests: the SDK's client ends its session with an error when
    # the server goes away, which here it must.
    process, url, seen = start("serve", SHOP, "--port", "0", "--mcp")
    try:
        session = {"mcp-protocol-version": "2025-06-18"}
        request = urllib.request.Request(url, data=INITIALIZE, method="POST")
        request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "application/json, text/event-stream")
        with urllib.request.urlopen(request, timeout=30) as response:
            session["mcp-session-id"] = response.headers["mcp-session-id"]
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        assert post(url, json.dumps(initialized).encode(), session)[0] == 202

        def call(id: int, name: str, arguments: dict) -> dict:
            body = {"jsonrpc": "2.0", "id": id, "method": "tools/call"}
            body["params"] = {"name": name, "arguments": arguments}
            status, text = post(url, json.dumps(body).encode(), session)
            assert status == 200, text
            data = [line for line in text.splitlines() if line.startswith("data: {")]
            return json.loads(data[0].removeprefix("data: "))["result"]

        answers = {}
        nap = threading.Thread(target=lambda: answers.update(nap=call(2, "nap", {"seconds": 2})))
        nap.start()
        time.sleep(0.5)
        process.terminate()
        time.sleep(0.5)
        refused = call(3, "add", {"a": 1})
        nap.join(timeout=30)
        assert refused["isError"] is True, refused
        assert refused["_meta"]["dev.ignite/error"]["code"] == "ignite::serve::shutting_down"
        assert "shutting down" in refused["content"][0]["text"]
        # The call in flight was answered, not cut off.
        assert answers["nap"]["structuredContent"] == {"result": "rested"}, answers
    finally:
        rest = process.communicate(timeout=30)
    assert process.returncode == 0, "".join(seen) + rest[1]
    assert "stopped: every run in flight finished" in rest[1], rest[1]


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
