#!/usr/bin/env bash
# Installs the Python checkers the test suite runs into tests/py/.venv (ignored by git). The tests
# look there; without it they are skipped with a note locally and fail under CI.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
if [ ! -x "$here/.venv/bin/python" ]; then
  "$python" -m venv "$here/.venv"
fi
"$here/.venv/bin/pip" install --quiet --disable-pip-version-check -r "$here/requirements.txt"
