#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. the Debian packages, and the real upstream components (tests/real/components.sh: the
#      Kubernetes 1.26 and 1.27 components, kubeadm, the kubelet, etcd, crictl, the images, the
#      fake AWS) built beside the C++ build, which treats warnings as errors;
#   2. the whole-system runs that need the machine to themselves: the sandbox on the model cluster
#      (label "sandbox") and the tests against the real components (label "real");
#   3. then, in the background, the kubeadm cluster's runs (label "kubeadm": real kubelets and
#      containerd; minutes of waiting for each real move), while the rest runs in front: every
#      other test of the optimised build, the same under AddressSanitizer and
#      UndefinedBehaviorSanitizer, and the fuzz targets (tests/fuzz) for a while.
# C++ compilations are cached by ccache (CCACHE_DIR, default ~/.cache/handoff/ccache), the Go
# builds by Go's own cache: a second run rebuilds only what changed.
set -euo pipefail
cd "$(dirname "$0")/.."

bash packaging/install-deps.sh
export CCACHE_DIR="${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/handoff/ccache}"
mkdir -p "$CCACHE_DIR"
ccache --max-size 5G > /dev/null
started=$SECONDS
stage() { printf '\n== [%dm%02ds] %s\n' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)) "$*"; }

# The components build (Go, minutes on a cold cache, much of it downloading modules) runs beside
# the C++ build; its log is shown if it fails, and a second run builds nothing.
components_log="$(mktemp)"
stage "real components (tests/real/components.sh), in the background: log in $components_log"
bash tests/real/components.sh > "$components_log" 2>&1 &
components_pid=$!

stage "build (warnings are errors)"
HANDOFF_BUILD_DIR=build bash packaging/build.sh -DHANDOFF_WERROR=ON -DHANDOFF_SANITIZE=OFF

if ! wait "$components_pid"; then
  cat "$components_log" >&2
  echo "tests/run.sh: tests/real/components.sh failed (log above)" >&2
  exit 1
fi
cat "$components_log"
rm -f "$components_log"

# A test labelled "real" or "kubeadm" fails, rather than skips, when a component is missing.
export HANDOFF_REQUIRE_REAL=1

stage "test: the whole-system runs (labels sandbox, real), one at a time"
ctest --test-dir build --output-on-failure --label-regex '^(sandbox|real)$'

kubeadm_log="$(mktemp)"
stage "test: the kubeadm cluster's runs (label kubeadm), in the background: log in $kubeadm_log"
# In a process group of its own (setsid): ctest neither passes a signal on to the test it runs
# nor takes SIGINT in the background, so whatever ends this script stops the whole group, and
# each sandbox takes SIGTERM as an interrupt and tears its cluster down before it exits.
setsid ctest --test-dir build --output-on-failure --label-regex '^kubeadm$' > "$kubeadm_log" 2>&1 &
kubeadm_pid=$!
stop_kubeadm_runs() {
  kill -TERM -- -"$kubeadm_pid" 2> /dev/null || return 0
  echo "tests/run.sh: stopping the kubeadm runs (log: $kubeadm_log)" >&2
  local waited
  for waited in $(seq 120); do
    kill -0 -- -"$kubeadm_pid" 2> /dev/null || return 0
    sleep 1
  done
  echo "tests/run.sh: the kubeadm runs did not stop within ${waited}s" >&2
}
trap stop_kubeadm_runs EXIT

stage "test: everything else"
ctest --test-dir build --output-on-failure --parallel "$(nproc)" \
  --label-exclude '^(sandbox|real|kubeadm)$'

stage "build and test under ASan + UBSan"
# Unoptimised and without debug info: on two cores this halves the second build's time, and the
# sanitizers need neither (they report function names either way).
HANDOFF_BUILD_DIR=build-sanitize bash packaging/build.sh -DHANDOFF_WERROR=ON -DHANDOFF_SANITIZE=ON \
  -DCMAKE_BUILD_TYPE=
# The whole-system runs (labels sandbox, real, kubeadm: minutes of real lease handovers and the
# upstream components) ran in the optimised pass; their parts are tested here by their own suites.
# tests/sanitizers/lsan.supp says why its one suppression is there.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp" \
  ctest --test-dir build-sanitize --output-on-failure --parallel "$(nproc)" \
  --label-exclude '^(sandbox|real|kubeadm)$'

stage "fuzz: every target over its committed corpus, then fuzzed for a bounded time"
# clang builds only the fuzz targets (tests/fuzz) and the libraries they link, with libFuzzer's
# coverage, ASan and UBSan. Each target runs HANDOFF_FUZZ_SECONDS (default 20) from its seeds, two
# at a time; a crash, a hang (-timeout=10) or -rss_limit_mb=2048 exceeded fails the run and prints
# the input's path. Longer runs: `ninja -C build-fuzz fuzz-long` (tests/fuzz/README.md).
CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DHANDOFF_FUZZ=ON -DHANDOFF_WERROR=ON -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
cmake --build build-fuzz --target fuzz-targets --parallel "$(nproc)"
ctest --test-dir build-fuzz --label-regex fuzz --output-on-failure
bash tests/fuzz/run_fuzzers.sh --seconds "${HANDOFF_FUZZ_SECONDS:-20}" --jobs 2 build-fuzz

stage "test: waiting for the kubeadm cluster's runs"
kubeadm_status=0
wait "$kubeadm_pid" || kubeadm_status=$?
trap - EXIT
cat "$kubeadm_log"
rm -f "$kubeadm_log"
if [ "$kubeadm_status" -ne 0 ]; then
  echo "tests/run.sh: the kubeadm cluster's runs failed (log above)" >&2
  exit 1
fi
stage "every test passed"
