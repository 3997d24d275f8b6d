"""An agent of the OpenAI Agents SDK with one function tool, on promptgate's Responses API: the SDK's
own Responses model (its default), once run whole and once streamed. The model calls the tool, the
SDK runs it and sends the result back, the model answers. Prints {"whole": {...}, "streamed":
{...}} with each run's final output and the tool's calls as JSON; exits with status 1 when the SDK
rejects a response.

The upstream answers the test queues, per run: a call of `get_weather`, then a text answer.

usage: python agents_check.py <base-url-ending-in-/v1> <model> [api-key]
"""

import asyncio
import json
import sys

from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled
from openai import AsyncOpenAI

from checker import command_line, report

CALLS = []


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    CALLS.append(city)
    return json.dumps({"city": city, "celsius": 4})


async def run(base_url, model, api_key):
    client = AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    agent = Agent(
        name="Forecaster",
        instructions="Answer with the weather tool.",
        tools=[get_weather],
        model=OpenAIResponsesModel(model=model, openai_client=client),
    )
    whole = await Runner.run(agent, "Weather in Oslo?")
    streamed_run = Runner.run_streamed(agent, "Weather in Bergen?")
    async for _ in streamed_run.stream_events():
        pass
    return {
        "whole": {"output": whole.final_output, "items": [item.type for item in whole.new_items]},
        "streamed": {
            "output": streamed_run.final_output,
            "items": [item.type for item in streamed_run.new_items],
        },
        "calls": CALLS,
    }


def main() -> int:
    base_url, model, api_key = command_line("agents_check.py")
    # The SDK would send its traces to OpenAI; nothing leaves the machine in a test.
    set_tracing_disabled(True)
    return report(lambda: asyncio.run(run(base_url, model, api_key)))


if __name__ == "__main__":
    sys.exit(main())
