#!/usr/bin/env bash
# Runs the fake AWS's own tests (test_fake_aws.py) with pytest in the components' venv, which
# tests/real/components.sh makes. Without it: skipped (exit 77 for ctest), or a failure when
# HANDOFF_REQUIRE_REAL=1.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
python="$(bash "$here/components.sh" --print-dir)/venv/bin/python3"
if [ ! -x "$python" ]; then
  echo "no $python: run bash tests/real/components.sh" >&2
  [ "${HANDOFF_REQUIRE_REAL:-}" = 1 ] && exit 1
  exit 77
fi
exec "$python" -m pytest -q -p no:cacheprovider "$here/test_fake_aws.py"
