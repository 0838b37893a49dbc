"""`ignite mcp` over stdio, driven by the official Python SDK's client in
both protocol eras (the `initialize` handshake and 2026-07-28's
`server/discover`)."""

import json
import os
import subprocess
import tempfile
import time

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from conftest import HERE, SHOP, ignite, session


async def test_the_grant_decides_what_is_listed(era):
    async with session(era) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
    assert names == ["add", "quote_item", "nap", "broken", "mark", "Checkout", "Slow", "Marked"]
    async with session(era, "--capabilities", "email_send") as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
    assert "send_mail" in names and "Notify" in names


async def test_schemas_come_from_the_declared_types(era):
    async with session(era) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    add = tools["add"]
    assert add.description == "Adds two whole numbers"
    assert add.input_schema["required"] == ["a"]
    assert add.input_schema["properties"]["b"] == {
        "type": "integer",
        "description": "The second",
        "default": 1,
    }
    # An integer result is wrapped: structuredContent is always an object.
    assert add.output_schema["properties"]["result"] == {"type": "integer"}
    assert tools["quote_item"].output_schema["required"] == ["sku", "total"]
    checkout = tools["Checkout"]
    assert checkout.input_schema["additionalProperties"] is False
    assert checkout.input_schema["properties"]["count"]["description"] == "How many"
    quote = checkout.output_schema["properties"]["quote"]
    assert quote["properties"]["total"]["type"] == "number"


async def test_a_tool_result_is_structured_content_and_the_same_text(era):
    async with session(era) as client:
        result = await client.call_tool("add", {"a": 2})
    assert not result.is_error
    assert result.structured_content == {"result": 3}
    assert json.loads(result.content[0].text) == result.structured_content


async def test_a_contract_runs_as_ignite_run_does(era):
    async with session(era) as client:
        result = await client.call_tool("Checkout", {"sku": "tea", "count": 3})
    assert not result.is_error, result.content[0].text
    assert result.structured_content == {"quote": {"sku": "tea", "total": 7.5}, "doubled": 6}
    assert json.loads(result.content[0].text) == result.structured_content


async def test_a_failed_guard_names_the_code_and_the_node_path(era):
    async with session(era) as client:
        result = await client.call_tool("Checkout", {"sku": "tea", "count": 0})
    assert result.is_error
    text = result.content[0].text
    assert text.startswith("error[ignite::run::guard_failed]: "), text
    assert "node: Checkout > some" in text
    assert "an order needs at least one item" in text
    assert result.meta["dev.ignite/error"]["path"] == "Checkout > some"


async def test_bad_arguments_list_every_problem(era):
    async with session(era) as client:
        contract = await client.call_tool("Checkout", {"count": "many", "colour": "red"})
        tool = await client.call_tool("add", {"a": "two"})
    assert contract.is_error
    problems = contract.meta["dev.ignite/error"]["problems"]
    assert [p["message"] for p in problems] == [
        "unknown input `colour`",
        "missing required input `sku` (string)",
        'input `count`: expected integer, got string "many"',
    ]
    assert "add `\"sku\": VALUE` to the call's arguments" in contract.content[0].text
    assert tool.is_error
    assert tool.content[0].text.startswith("error[ignite::tools::invalid_arguments]: add: ")


async def test_a_failing_tool_is_an_error_result_with_its_stderr(era):
    async with session(era) as client:
        result = await client.call_tool("broken", {"why": "testing"})
    assert result.is_error
    assert result.meta["dev.ignite/error"]["code"] == "ignite::tools::failed"
    assert "exited with status 3" in result.content[0].text
    assert "broken" in result.content[0].text


async def test_a_tool_the_grant_does_not_cover_is_refused(era):
    async with session(era) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("send_mail", {"to": "a@example.com"})
        assert "`--capabilities email_send`" in str(refused.value)
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("ad", {"a": 1})
        assert "did you mean `add`?" in str(unknown.value)
    async with session(era, "--capabilities", "email_send") as client:
        result = await client.call_tool("Notify", {"to": "a@example.com"})
    assert result.structured_content == {"mail": {"sent": True, "to": "a@example.com"}}


async def test_a_call_past_the_time_limit_is_stopped(era):
    async with session(era, "--timeout", "1") as client:
        started = time.monotonic()
        contract = await client.call_tool("Slow", {"seconds": 30})
        tool = await client.call_tool("nap", {"seconds": 30})
        took = time.monotonic() - started
    assert took < 10, took
    for result in (contract, tool):
        assert result.is_error
        assert result.meta["dev.ignite/error"]["code"] == "ignite::run::deadline"
        assert "`--timeout`" in result.content[0].text


async def test_a_progress_token_gets_a_notification_per_finished_node(era):
    seen = []

    async def progress(done, total, message):
        seen.append((done, total, message))

    async with session(era) as client:
        result = await client.call_tool(
            "Checkout", {"sku": "tea", "count": 1}, progress_callback=progress
        )
        tool = []

        async def on_tool(done, total, message):
            tool.append((done, total, message))

        await client.call_tool("add", {"a": 1}, progress_callback=on_tool)
    assert not result.is_error
    # The guard, `quote` and `doubled`: three nodes, each reported once,
    # the last notification before the answer.
    assert [total for _, total, _ in seen] == [3] * len(seen), seen
    done = [d for d, _, _ in seen]
    assert done == sorted(set(done)) and done[-1] == 3, seen
    assert all(m.startswith("finished `") for _, _, m in seen), seen
    assert tool == [(1, 1, "finished `add`")]


async def test_a_for_of_calls_reports_each_finished_item(era):
    seen = []

    async def progress(done, total, message):
        seen.append((done, total, message))

    async with session(era, program=str(HERE / "naps.ign")) as client:
        result = await client.call_tool(
            "Naps", {"lengths": [0.2, 0.8, 1.4]}, progress_callback=progress
        )
    assert not result.is_error, result.content[0].text
    assert result.structured_content == {"naps": ["rested"] * 3}
    # The `for` node and its three items: the items as they finish (0.6 s
    # apart), the node with the last one or after it.
    assert [total for _, total, _ in seen] == [4] * len(seen), seen
    done = [d for d, _, _ in seen]
    assert done[:2] == [1, 2] and done[-1] == 4 and done == sorted(set(done)), seen
    assert [m for _, _, m in seen[:2]] == ["finished `naps[0]`", "finished `naps[1]`"], seen


async def test_a_cancelled_call_is_stopped(era, tmp_path):
    marks = {name: tmp_path / f"{name}.txt" for name in ("mark", "Marked")}
    async with session(era) as client:
        for name, path in marks.items():
            # Abandoning the call sends `notifications/cancelled`.
            with anyio.move_on_after(1):
                await client.call_tool(name, {"seconds": 3, "path": str(path)})
        # Had either child lived, it would have written its file by now.
        await anyio.sleep(4)
        assert [name for name, path in marks.items() if path.exists()] == []
        # The server goes on answering.
        result = await client.call_tool("add", {"a": 1})
        assert result.structured_content == {"result": 2}


def jsonrpc(*messages: dict, args=()) -> subprocess.CompletedProcess:
    """`ignite mcp shop.ign` fed `messages` on stdin, one per line."""
    text = "".join(json.dumps(m) + "\n" for m in messages)
    return subprocess.run(
        [ignite(), "mcp", SHOP, "--no-cache", *args],
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=HERE,
    )


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw", "version": "1"},
    },
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_stdout_carries_json_rpc_only():
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "broken", "arguments": {"why": "noise on stderr"}},
    }
    unknown = {"jsonrpc": "2.0", "id": 3, "method": "no/such/method"}
    out = jsonrpc(INITIALIZE, INITIALIZED, call, unknown)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # Calls run concurrently: answers come as they finish.
    answers = sorted((json.loads(line) for line in lines), key=lambda a: a["id"])
    assert all(a["jsonrpc"] == "2.0" for a in answers), lines
    assert [a["id"] for a in answers] == [1, 2, 3]
    assert answers[0]["result"]["protocolVersion"] == "2025-06-18"
    assert answers[1]["result"]["isError"] is True
    assert answers[2]["error"]["code"] == -32601
    assert "serving 8 tool(s)" in out.stderr


def raw(lines: bytes, args=()) -> tuple[list[dict], str]:
    """`ignite mcp shop.ign` fed the bytes `lines` after the handshake; its
    answers (by id, `None` last) and its stderr."""
    handshake = "".join(json.dumps(m) + "\n" for m in (INITIALIZE, INITIALIZED)).encode()
    out = subprocess.run(
        [ignite(), "mcp", SHOP, "--no-cache", *args],
        input=handshake + lines,
        capture_output=True,
        timeout=60,
        cwd=HERE,
    )
    assert out.returncode == 0, out.stderr
    answers = [json.loads(line) for line in out.stdout.decode().splitlines()]
    assert all(a["jsonrpc"] == "2.0" for a in answers), answers
    answers.sort(key=lambda a: (a.get("id") is None, str(a.get("id"))))
    return answers[1:] if answers[0].get("id") == 1 else answers, out.stderr.decode()


LIST = {"jsonrpc": "2.0", "id": 9, "method": "tools/list"}


def test_malformed_json_is_a_parse_error_and_the_session_goes_on():
    lines = b'{"jsonrpc": "2.0", "id": 2, "method": \n\xff\xfe not json\n' + (
        json.dumps(LIST) + "\n"
    ).encode()
    answers, _ = raw(lines)
    listed, *errors = answers
    assert listed["id"] == 9 and len(listed["result"]["tools"]) == 8, listed
    assert [e["id"] for e in errors] == [None, None], errors
    assert [e["error"]["code"] for e in errors] == [-32700, -32700], errors
    assert all(e["error"]["message"].startswith("parse error: ") for e in errors), errors


def test_json_that_is_no_request_is_an_invalid_request():
    lines = [
        {"jsonrpc": "2.0", "id": 7, "method": 42},
        {"jsonrpc": "1.0", "id": "eight", "method": "tools/list"},
        [LIST, LIST],
        # Neither a notification nor a response gets an answer: not even
        # a parse error sent back (no endless exchange).
        {"jsonrpc": "2.0", "method": "notifications/not/a/real/one"},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "parse error"}},
        {"jsonrpc": "2.0", "id": 1234, "result": [1]},
        LIST,
    ]
    answers, _ = raw("".join(json.dumps(m) + "\n" for m in lines).encode())
    assert [a.get("id") for a in answers] == [7, 9, "eight", None], answers
    assert [a["error"]["code"] for a in answers if "error" in a] == [-32600] * 3, answers
    assert "a request is" in answers[0]["error"]["message"], answers[0]
    assert "batches are not supported" in answers[3]["error"]["message"], answers[3]


def test_a_line_over_the_cap_is_refused_as_soon_as_it_passes_it():
    process = subprocess.Popen(
        [ignite(), "mcp", SHOP, "--no-cache", "--max-body", "1K"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=HERE,
    )
    try:
        for message in (INITIALIZE, INITIALIZED):
            process.stdin.write((json.dumps(message) + "\n").encode())
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1
        # Not ended yet: the answer comes once the cap is passed.
        process.stdin.write(b'{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "x": "' + b"x" * 4096)
        process.stdin.flush()
        refused = json.loads(process.stdout.readline())
        assert refused["id"] is None and refused["error"]["code"] == -32600, refused
        assert "longer than the limit of 1024 bytes" in refused["error"]["message"], refused
        assert "`--max-body`" in refused["error"]["message"], refused
        # The rest of the line (64 MiB more) is dropped as it comes, never kept.
        chunk = b"y" * (1 << 20)
        for _ in range(64):
            process.stdin.write(chunk)
        process.stdin.write(b'"}\n' + (json.dumps(LIST) + "\n").encode())
        process.stdin.flush()
        listed = json.loads(process.stdout.readline())
        assert listed["id"] == 9 and len(listed["result"]["tools"]) == 8, listed
        with open(f"/proc/{process.pid}/status") as status:
            peak = next(line for line in status if line.startswith("VmHWM:"))
        assert int(peak.split()[1]) < 48 * 1024, peak
        process.stdin.close()
        assert process.wait(timeout=30) == 0
        assert process.stdout.read() == b""
    finally:
        process.kill()
        process.wait()


def test_a_program_with_errors_serves_nothing():
    with tempfile.TemporaryDirectory() as folder:
        bad = os.path.join(folder, "bad.ign")
        with open(bad, "w") as f:
            f.write("contract Broken {\n  output missing\n}\n")
        out = subprocess.run(
            [ignite(), "mcp", bad], input="", capture_output=True, text=True, timeout=60
        )
    assert out.returncode == 1
    assert out.stdout == ""
    assert "missing" in out.stderr


def test_two_entries_with_one_name_are_an_error_at_start():
    with tempfile.TemporaryDirectory() as folder:
        clash = os.path.join(folder, "clash.ign")
        with open(clash, "w") as f:
            f.write(
                "tool Echo {\n  param x: integer\n  returns x\n}\n\n"
                "contract echo {\n  input a: integer\n  compute e = Echo(x: a)\n  output e\n}\n"
            )
        out = subprocess.run(
            [ignite(), "mcp", clash], input="", capture_output=True, text=True, timeout=60
        )
    assert out.returncode == 1, out.stderr
    assert out.stdout == ""
    assert "two MCP tools would be named `echo`" in out.stderr
