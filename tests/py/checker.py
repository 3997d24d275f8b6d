"""What the client checkers share: their command line and how they report. A checker prints one JSON
object: its result, or {"failure": "..."} with what the client raised (exit status 1)."""

import json
import sys
from typing import Any, Callable


def command_line(script: str) -> tuple[str, str, str]:
    """(base URL, model, API key) from `script <base-url> <model> [api-key]`; usage and exit 2 otherwise."""
    if len(sys.argv) < 3:
        print(f"usage: python {script} <base-url> <model> [api-key]", file=sys.stderr)
        sys.exit(2)
    api_key = sys.argv[3] if len(sys.argv) > 3 else "unused-in-single-user-mode"
    return sys.argv[1], sys.argv[2], api_key


def report(check: Callable[[], Any]) -> int:
    """Runs `check` and prints its result; the exit status to return."""
    try:
        result = check()
    except Exception as error:  # the client's own checks raise; report what it said
        print(json.dumps({"failure": f"{type(error).__name__}: {error}"}))
        return 1
    print(json.dumps(result))
    return 0


def check_with_openai(script: str, run: Callable[[Any, str], Any]) -> int:
    """A checker's whole run: the `openai` client its command line points at (retries off), given
    with the model to `run`, whose result is reported."""
    from openai import OpenAI

    base_url, model, api_key = command_line(script)
    client = OpenAI(base_url=base_url, api_key=api_key, max_retries=0)
    return report(lambda: run(client, model))
