"""An MCP server whose tool asks the user a question mid-call (elicitation), built on the Python SDK.

`book_table` asks for a form (name, guests, vegetarian, seating) through the SDK's resolver
(`Resolve` returning `Elicit`), which speaks both eras: an `input_required` round under 2026-07-28,
a server-to-client `elicitation/create` before. Its text result names the action the client
answered and what the form held, so a test reads the answer in what the model sees.

Usage: python py_elicit_peer.py PORT
"""

import sys
from typing import Annotated, Literal

from mcp.server.mcpserver import AcceptedElicitation, Elicit, ElicitationResult, MCPServer, Resolve
from pydantic import BaseModel, Field

PORT = int(sys.argv[1])

server = MCPServer("promptgate-py-elicit-peer")


class Booking(BaseModel):
    name: str = Field(description="Who the table is for", min_length=1, max_length=40)
    guests: int = Field(description="How many people", ge=1, le=12)
    vegetarian: bool = Field(default=False, description="Vegetarian menu")
    seating: Literal["inside", "terrace"] = Field(default="inside", description="Where to sit")


def ask_for_booking(restaurant: str) -> Elicit[Booking]:
    return Elicit(f"Booking details for {restaurant}", Booking)


@server.tool()
async def book_table(
    restaurant: str,
    booking: Annotated[ElicitationResult[Booking], Resolve(ask_for_booking)],
) -> str:
    """Book a table; asks the user for the details."""
    if isinstance(booking, AcceptedElicitation):
        details = booking.data
        return (
            f"accept: booked {restaurant} for {details.name}, {details.guests} guests, "
            f"vegetarian={details.vegetarian}, seating={details.seating}"
        )
    return f"{booking.action}: nothing booked"


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=PORT)
