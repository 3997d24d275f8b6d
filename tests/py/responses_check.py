"""promptgate's Responses API through the official `openai` Python client: `responses.create`,
`responses.stream` (whose accumulator refuses events out of order), a `previous_response_id`
chain and a function tool round trip. Prints what each step saw as one JSON object; exits with
status 1 when the client rejects a response.

The upstream answers the test queues, in this order: a text answer, a streamed text answer, a text
answer, a call of `get_weather`, a text answer.

usage: python responses_check.py <base-url-ending-in-/v1> <model> [api-key]
"""

import json
import sys

from checker import check_with_openai

WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
    "strict": False,
}


def summary(response):
    return {
        "id": response.id,
        "status": response.status,
        "text": response.output_text,
        "types": [item.type for item in response.output],
        "total_tokens": response.usage.total_tokens if response.usage else None,
        "previous": response.previous_response_id,
    }


def run(client, model):
    created = client.responses.create(model=model, input="Say hello")
    events = []
    with client.responses.stream(model=model, input="Tell me a story") as stream:
        for event in stream:
            events.append(event.type)
        streamed = stream.get_final_response()
    chained = client.responses.create(
        model=model, input="And then?", previous_response_id=streamed.id
    )
    asked = client.responses.create(model=model, input="Weather in Oslo?", tools=[WEATHER])
    call = next(item for item in asked.output if item.type == "function_call")
    answered = client.responses.create(
        model=model,
        previous_response_id=asked.id,
        tools=[WEATHER],
        input=[
            {
                "type": "function_call_output",
                "call_id": call.call_id,
                "output": json.dumps({"celsius": 4}),
            }
        ],
    )
    return {
        "created": summary(created),
        "streamed": {**summary(streamed), "events": events},
        "chained": summary(chained),
        "asked": {
            **summary(asked),
            "call": {"name": call.name, "arguments": json.loads(call.arguments)},
        },
        "answered": summary(answered),
    }


if __name__ == "__main__":
    sys.exit(check_with_openai("responses_check.py", run))
