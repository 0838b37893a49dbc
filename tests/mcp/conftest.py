"""What the tests of `ignite mcp` share: the binary (`IGNITE`, set by
tests/mcp.rs), the program they serve and a session of the official
Python SDK's client over stdio, in either protocol era."""

import os
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

HERE = Path(__file__).parent
SHOP = str(HERE / "shop.ign")


def ignite() -> str:
    path = os.environ.get("IGNITE")
    if not path:
        pytest.fail("IGNITE must name the ignite binary (tests/mcp.rs sets it)")
    return path


@asynccontextmanager
async def session(era: str, *args: str, errlog=None, program=SHOP):
    """A client session with `ignite mcp PROGRAM ARGS...` (shop.ign unless
    told), opened with the
    `initialize` handshake (`era == "handshake"`) or `server/discover`
    (`era == "modern"`, protocol 2026-07-28)."""
    params = StdioServerParameters(
        command=ignite(), args=["mcp", program, "--no-cache", *args], cwd=str(HERE)
    )
    kwargs = {} if errlog is None else {"errlog": errlog}
    async with stdio_client(params, **kwargs) as (read, write):
        async with ClientSession(read, write) as client:
            if era == "handshake":
                await client.initialize()
            else:
                await client.discover()
            yield client


@pytest.fixture(params=["handshake", "modern"])
def era(request) -> str:
    """Each test runs in both protocol eras."""
    return request.param
