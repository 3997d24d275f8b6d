#!/usr/bin/env bash
# Generates the client from a live promptgate at $1, compiles it with tsc --strict, runs it there.
# Prints the client's JSON line; fails (with the generator's or compiler's words) otherwise.
set -euo pipefail
cd "$(dirname "$0")"
rm -rf generated
node generate.mjs "$1" >/dev/null
node_modules/.bin/tsc -p . >&2
node generated/client.js "$1"
