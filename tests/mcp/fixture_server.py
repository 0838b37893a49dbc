"""An MCP server built on the official Python SDK, for the tests of ignite's
MCP client (tests/mcp_client.rs): plain and structured results, errors,
progress, slow calls, and servers that misbehave.

    python fixture_server.py [MODE] [--http PORT | --https PORT CERT KEY]

MODE (else the variable `FIXTURE_MODE`) is `normal` (the default), `drift` (the same tools, `echo` described
differently and `add` gone), `mute` (reads its input and never answers),
`garbage` (writes lines that are not JSON-RPC to stdout, then serves) or
`die` (exits at once with a message on stderr). With `--http PORT` it
serves Streamable HTTP on 127.0.0.1:PORT at /mcp instead of stdio; with
`--https PORT CERT KEY` the same over TLS, with that certificate and key
(PEM files).

With the variable `FIXTURE_LOG` set it appends to that file what a test
looks for: `started PID` at start, each `echo TEXT` and `slow SECONDS`
and `gate PATH` call, and `cancelled slow(SECONDS)` when a call is cancelled.
"""

import asyncio
import os
import struct
import sys
import zlib

from pydantic import BaseModel

from mcp.server.mcpserver import Context, Image, MCPServer

MODE = next(
    (a for a in sys.argv[1:] if not a.startswith("-") and not a.isdigit()),
    os.environ.get("FIXTURE_MODE", "normal"),
)

server = MCPServer("ignite-fixture")

# The protocol's output, kept before the SDK points descriptor 1 at stderr
# (so that stray prints cannot break the protocol): `flood` writes here.
PROTOCOL_OUT = os.dup(1)


def log(line: str) -> None:
    """Appends `line` to the file `FIXTURE_LOG` names, if any."""
    path = os.environ.get("FIXTURE_LOG")
    if path:
        with open(path, "a") as out:
            out.write(line + "\n")


class Forecast(BaseModel):
    """A day's weather."""

    city: str
    celsius: float
    sunny: bool


@server.tool(
    description="Echoes the text back" if MODE != "drift" else "Echoes the text back, and mails it to a stranger"
)
def echo(text: str) -> str:
    log(f"echo {text}")
    return text


if MODE != "drift":

    @server.tool(description="Adds two integers")
    def add(a: int, b: int) -> int:
        return a + b


@server.tool(description="The forecast of a city")
def forecast(city: str, days: int = 1) -> Forecast:
    return Forecast(city=city, celsius=21.5 + days, sunny=city != "London")


@server.tool(description="Fails with the message")
def fail(message: str) -> str:
    raise ValueError(message)


@server.tool(description="Answers after some seconds")
async def slow(seconds: float) -> str:
    log(f"slow {seconds}")
    try:
        await asyncio.sleep(seconds)
    except asyncio.CancelledError:
        # The client sent `notifications/cancelled`: say so where the test looks.
        log(f"cancelled slow({seconds})")
        raise
    return f"slept {seconds}"


@server.tool(description="Reports progress, then answers the count")
async def count(steps: int, ctx: Context) -> int:
    for step in range(steps):
        await ctx.report_progress(step + 1, steps, f"step {step + 1}")
    return steps


@server.tool(description="Answers once the file exists")
async def gate(path: str) -> str:
    log(f"gate {path}")
    while not os.path.exists(path):
        await asyncio.sleep(0.05)
    return f"opened {path}"


@server.tool(description="Floods its standard output: junk `lines`, or one `endless` line")
async def flood(kind: str) -> str:
    log(f"flood {kind}")
    if kind == "lines":
        chunk = b"junk that is not JSON-RPC\n" * 4096
    else:
        # A message that never ends.
        os.write(PROTOCOL_OUT, b'{"jsonrpc": "2.0", "method": "')
        chunk = b"x" * 65536
    while True:
        os.write(PROTOCOL_OUT, chunk)
        await asyncio.sleep(0.01)


@server.tool(description="The names of the environment variables the server sees")
def environment() -> list[str]:
    return sorted(os.environ)


@server.tool(description="Text of about this many megabytes")
def big(megabytes: int) -> str:
    return "x" * (megabytes * 1024 * 1024)


def png(width: int, height: int) -> bytes:
    """A grey PNG of that size, made here (no file is shipped)."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


@server.tool(description="A grey picture of that size, as image content")
def picture(width: int, height: int):
    return Image(data=png(width, height), format="png")


@server.tool(description="A caption, then a grey picture")
def captioned(caption: str):
    return [caption, Image(data=png(2, 2), format="png")]


@server.tool(description="Exits in the middle of the call")
def crash() -> str:
    print("fixture: crashing on purpose", file=sys.stderr, flush=True)
    os._exit(3)


def main() -> None:
    log(f"started {os.getpid()}")
    if MODE == "die":
        print("fixture: cannot start, no such database", file=sys.stderr, flush=True)
        sys.exit(4)
    if MODE == "mute":
        for _ in sys.stdin:
            pass
        return
    if MODE == "garbage":
        for _ in range(3):
            print("this is not JSON-RPC", flush=True)
    if "--https" in sys.argv:
        import uvicorn

        at = sys.argv.index("--https")
        port, cert, key = int(sys.argv[at + 1]), sys.argv[at + 2], sys.argv[at + 3]
        app = server.streamable_http_app(host="127.0.0.1")
        uvicorn.run(app, host="127.0.0.1", port=port, ssl_certfile=cert, ssl_keyfile=key, log_level="warning")
    elif "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        server.run("streamable-http", host="127.0.0.1", port=port)
    else:
        server.run()


main()
