#!/usr/bin/env bash
# The whole test suite, as CI runs it: install the Debian packages, build with warnings as errors
# and run every test; then the same under AddressSanitizer and UndefinedBehaviorSanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."

bash packaging/install-deps.sh

echo "== build (warnings are errors) and test"
HANDOFF_BUILD_DIR=build bash packaging/build.sh -DHANDOFF_WERROR=ON -DHANDOFF_SANITIZE=OFF
ctest --test-dir build --output-on-failure --parallel "$(nproc)"

echo "== build and test under ASan + UBSan"
# Unoptimised and without debug info: on two cores this halves the second build's time, and the
# sanitizers need neither (they report function names either way).
HANDOFF_BUILD_DIR=build-sanitize bash packaging/build.sh -DHANDOFF_WERROR=ON -DHANDOFF_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=
# The whole-system sandbox runs (label "sandbox", minutes of real lease handovers) ran in the
# optimised pass; their parts are tested here by their own suites.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-sanitize --output-on-failure --parallel "$(nproc)" --label-exclude sandbox
