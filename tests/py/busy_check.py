"""A provider that is rate limiting, reached through the official `openai` Python client with
retries off: a chat completions stream and a Responses stream. Each must fail as the client's own
`RateLimitError`, with the wait the provider asked for, before any event is read. Prints
{"completions": {...}, "responses": {...}}, each {status, code, retry_after, rate_limit_error}, as
JSON.

The upstream answers the test queues: two 429s.

usage: python busy_check.py <base-url-ending-in-/v1> <model> [api-key]
"""

import sys

import openai

from checker import check_with_openai


def refusal(start_stream):
    """What the client raised for a stream it started and read to its end: status, code, wait."""
    try:
        for _ in start_stream():
            pass
    except openai.APIStatusError as error:
        return {
            "status": error.status_code,
            "code": error.code,
            "retry_after": error.response.headers.get("retry-after"),
            "rate_limit_error": isinstance(error, openai.RateLimitError),
        }
    return {"status": None, "code": None, "retry_after": None, "rate_limit_error": False}


def run(client, model):
    messages = [{"role": "user", "content": "Hello?"}]
    return {
        "completions": refusal(
            lambda: client.chat.completions.create(model=model, messages=messages, stream=True)
        ),
        "responses": refusal(lambda: client.responses.create(model=model, input="Hello?", stream=True)),
    }


if __name__ == "__main__":
    sys.exit(check_with_openai("busy_check.py", run))
