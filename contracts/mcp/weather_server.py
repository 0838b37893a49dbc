"""A small MCP server for contracts/outing.ign: a deterministic forecast
(no network), served over stdio with the official Python SDK (`mcp`, which
scripts/peers.sh installs into .peers/python)."""

from pydantic import BaseModel

from mcp.server.mcpserver import MCPServer

server = MCPServer("weather")

# Made-up weather, the same on every call.
CLIMATE = {"Paris": (22.0, True), "Oslo": (9.5, False), "Lisbon": (26.5, True), "London": (16.0, False)}


class Forecast(BaseModel):
    """Tomorrow's weather in a city."""

    city: str
    celsius: float
    sunny: bool


@server.tool(description="Tomorrow's forecast for a city")
def forecast(city: str) -> Forecast:
    celsius, sunny = CLIMATE.get(city, (18.0, True))
    return Forecast(city=city, celsius=celsius, sunny=sunny)


server.run()
