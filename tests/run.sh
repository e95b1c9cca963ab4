#!/usr/bin/env bash
# The whole test suite, as CI runs it: install the Debian packages and the real upstream
# components (tests/real/components.sh: etcd, kube-apiserver and kube-controller-manager 1.26,
# aws-cloud-controller-manager 1.27, the fake AWS), build with warnings as errors and run every
# test, the ones labelled "real" against those components included; then the same under
# AddressSanitizer and UndefinedBehaviorSanitizer; then the fuzz targets (tests/fuzz) for a while.
set -euo pipefail
cd "$(dirname "$0")/.."

bash packaging/install-deps.sh

# The components build (Go, minutes on a cold cache, much of it downloading modules) runs beside
# the C++ build; its log is shown if it fails, and a second run builds nothing.
components_log="$(mktemp)"
echo "== real components (tests/real/components.sh), in the background: log in $components_log"
bash tests/real/components.sh > "$components_log" 2>&1 &
components_pid=$!

echo "== build (warnings are errors)"
HANDOFF_BUILD_DIR=build bash packaging/build.sh -DHANDOFF_WERROR=ON -DHANDOFF_SANITIZE=OFF

if ! wait "$components_pid"; then
  cat "$components_log" >&2
  echo "tests/run.sh: tests/real/components.sh failed (log above)" >&2
  exit 1
fi
cat "$components_log"
rm -f "$components_log"

echo "== test"
# A test labelled "real" fails, rather than skips, when a component is missing.
export HANDOFF_REQUIRE_REAL=1
ctest --test-dir build --output-on-failure --parallel "$(nproc)"

echo "== build and test under ASan + UBSan"
# Unoptimised and without debug info: on two cores this halves the second build's time, and the
# sanitizers need neither (they report function names either way).
HANDOFF_BUILD_DIR=build-sanitize bash packaging/build.sh -DHANDOFF_WERROR=ON -DHANDOFF_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=
# The whole-system runs (label "sandbox": minutes of real lease handovers; label "real": the
# upstream components) ran in the optimised pass; their parts are tested here by their own suites.
# tests/sanitizers/lsan.supp says why its one suppression is there.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp" \
  ctest --test-dir build-sanitize --output-on-failure --parallel "$(nproc)" \
  --label-exclude 'sandbox|real'

echo "== fuzz: every target over its committed corpus, then fuzzed for a bounded time"
# clang builds only the fuzz targets (tests/fuzz) and the libraries they link, with libFuzzer's
# coverage, ASan and UBSan. Each target runs HANDOFF_FUZZ_SECONDS (default 20) from its seeds, two
# at a time; a crash, a hang (-timeout=10) or -rss_limit_mb=2048 exceeded fails the run and prints
# the input's path. Longer runs: `ninja -C build-fuzz fuzz-long` (tests/fuzz/README.md).
CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHANDOFF_FUZZ=ON -DHANDOFF_WERROR=ON
cmake --build build-fuzz --target fuzz-targets --parallel "$(nproc)"
ctest --test-dir build-fuzz --label-regex fuzz --output-on-failure
bash tests/fuzz/run_fuzzers.sh --seconds "${HANDOFF_FUZZ_SECONDS:-20}" --jobs 2 build-fuzz
