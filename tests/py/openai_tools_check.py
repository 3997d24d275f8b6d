"""A function-tool round trip through promptgate's chat-completions facade with the official
`openai` Python client: the model's call arrives in a whole completion, the tool's result goes back
in a `tool` message, and the answer streams through the client's streaming helper. Prints
{"call": {"finish_reason", "tool_calls"}, "answer": {"content", "finish_reason"}} as JSON; exits
with status 1 when the client rejects a response or no call arrives.

usage: python openai_tools_check.py <base-url-ending-in-/v1> <model> [api-key]
"""

import json
import sys

from openai import OpenAI

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def main() -> int:
    if len(sys.argv) < 3:
        print("usage: python openai_tools_check.py <base-url> <model> [api-key]", file=sys.stderr)
        return 2
    base_url, model = sys.argv[1], sys.argv[2]
    api_key = sys.argv[3] if len(sys.argv) > 3 else "unused-in-single-user-mode"
    client = OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    messages = [{"role": "user", "content": "What is the weather in Oslo?"}]
    try:
        first = client.chat.completions.create(model=model, messages=messages, tools=TOOLS)
        choice = first.choices[0]
        if not choice.message.tool_calls:
            raise RuntimeError(f"no tool call arrived: {choice}")
        call = choice.message.tool_calls[0]
        city = json.loads(call.function.arguments)["city"]
        messages.append(choice.message.model_dump(exclude_none=True))
        messages.append(
            {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"city": city, "sky": "clear"})}
        )
        with client.chat.completions.stream(model=model, messages=messages, tools=TOOLS) as stream:
            answer = stream.get_final_completion()
        print(
            json.dumps(
                {
                    "call": {
                        "finish_reason": choice.finish_reason,
                        "tool_calls": [c.model_dump() for c in choice.message.tool_calls],
                    },
                    "answer": {
                        "content": answer.choices[0].message.content,
                        "finish_reason": answer.choices[0].finish_reason,
                    },
                }
            )
        )
        return 0
    except Exception as error:  # noqa: BLE001 - any failure is the check's answer
        print(json.dumps({"failure": str(error)}))
        return 1


if __name__ == "__main__":
    sys.exit(main())
