#!/usr/bin/env bash
# Installs the outside MCP servers the promptgate-mcp tests talk to, into ignored directories next
# to this script, and prints the environment the tests read to find them:
#   eval "$(crates/promptgate-mcp/tests/peers/install.sh)"
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

(cd "$here" && npm ci --no-audit --no-fund --loglevel=error) >&2

python="${PYTHON:-python3}"
if [ ! -x "$here/.venv/bin/python" ]; then
  "$python" -m venv "$here/.venv" >&2
fi
"$here/.venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt" >&2

echo "export PROMPTGATE_TEST_NODE_PEERS_DIR=$here"
echo "export PROMPTGATE_TEST_PY_PEER_PYTHON=$here/.venv/bin/python"
