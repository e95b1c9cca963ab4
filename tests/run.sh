#!/usr/bin/env bash
# The whole test suite, as CI runs it:
#   1. the Debian packages; then three builds at once: the real upstream components
#      (tests/real/components.sh: the Kubernetes 1.26 and 1.27 components, kubeadm, the kubelet,
#      etcd, crictl, the images, the fake AWS), the optimised C++ build of the product and of the
#      whole-system runs' test binaries, warnings as errors, and, at the lowest CPU priority until
#      those two are done, so that it takes only what they leave idle, the second C++ build: clang,
#      unoptimised, ASan and UBSan, with libFuzzer's coverage where the fuzz targets reach
#      (tests/fuzz);
#   2. in the background, once the components are built (at once when they were up to date),
#      the kubeadm cluster's runs (label "kubeadm": real kubelets and containerd; minutes of
#      waiting for each real move), two at a time, each on a network of its own;
#   3. meanwhile, in front: the whole-system runs on the model (label "sandbox", while the Go
#      builds finish) and on the real components (label "real"): mostly waiting for leases, on
#      addresses of their own, 127.0.1.N, where the kubeadm cluster has its own bridge; the
#      package and systemd checks, in the optimised build; then every other test, once, in the
#      sanitizer build with the fuzz targets' corpora, and beside them each fuzz target for a while.
# The unit tests run only under the sanitizers: running them optimised as well cost a third of
# the CPU of a cold run and found nothing those runs do not.
set -euo pipefail
cd "$(dirname "$0")/.."

bash packaging/install-deps.sh
# A whole-system or kubeadm run that fails keeps what it left (its logs, the coordinator's last
# status, the timeline) here, and prints that status and its logs' last lines into this log
# (tests/rehearsal/sandbox/run/handoffctl_sandbox.h KeepFailedRun).
export HANDOFF_KEEP_FAILED_RUNS="${HANDOFF_KEEP_FAILED_RUNS:-$PWD/build/failed-runs}"
export CCACHE_DIR="${CCACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/handoff/ccache}"
# Depend mode: a miss hashes the compiler's own -MD output instead of running the preprocessor
# first (0.4 s per source here, some 4 core-minutes over a cold run's two builds).
export CCACHE_DEPEND=1
# The precompiled headers' users are cached only with this (packaging/build.sh says why).
export CCACHE_SLOPPINESS=pch_defines,time_macros
mkdir -p "$CCACHE_DIR"
ccache --max-size 5G > /dev/null
started=$SECONDS
# Each stage's mark says how busy the machine's CPUs were since the last one, and each big job
# (the builds, the components, the kubeadm runs) the CPU time it took: CI is CPU-bound on 2 cores.
export TIMEFORMAT='%0R s wall, CPU %0U s user + %0S s system'
cpu_mark() { # sets cpu_note: how busy the CPUs were since the previous call
  local name user nice system idle iowait irq softirq steal busy total
  read -r name user nice system idle iowait irq softirq steal _ < /proc/stat
  busy=$((user + nice + system + irq + softirq + steal))
  total=$((busy + idle + iowait))
  cpu_note=""
  if [ -n "${last_total:-}" ] && [ "$total" -gt "$last_total" ]; then
    cpu_note=" (CPU $((100 * (busy - last_busy) / (total - last_total)))% busy since the last mark)"
  fi
  last_busy=$busy last_total=$total
}
# timed LABEL COMMAND...: runs COMMAND, then prints "LABEL: <wall>, CPU <user> + <system>".
timed() {
  local TIMEFORMAT="$1: $TIMEFORMAT"
  shift
  time "$@"
}
stage() {
  cpu_mark
  printf '\n== [%dm%02ds] %s%s\n' $(((SECONDS - started) / 60)) $(((SECONDS - started) % 60)) \
    "$*" "$cpu_note"
}

# Background work runs in process groups of its own (setsid): ctest neither passes a signal on to
# the test it runs nor takes SIGINT in the background, so whatever ends this script stops each
# whole group, and each sandbox takes SIGTERM as an interrupt and tears its cluster down.
background_groups=()
stop_background() {
  local pid waited
  for pid in "${background_groups[@]}"; do kill -TERM -- -"$pid" 2> /dev/null || true; done
  for pid in "${background_groups[@]}"; do
    for waited in $(seq 120); do
      kill -0 -- -"$pid" 2> /dev/null || break
      sleep 1
    done
  done
}
trap stop_background EXIT

# The components build (Go, minutes on a cold cache, much of it downloading modules) runs beside
# the C++ builds; its log is shown if it fails, and a second run builds nothing.
components_log="$(mktemp)"
stage "real components (tests/real/components.sh), in the background: log in $components_log"
# The kubeadm runs wait for the components and are the longest job after them: the components come
# before the optimised build (their session's autogroup at nice -10: nine tenths of the CPU when
# both want it), which takes what the Go builds leave (downloads, single-threaded links).
setsid bash -c '{ echo -10 > /proc/self/autogroup; } 2> /dev/null || true
  TIMEFORMAT="tests/real/components.sh: $TIMEFORMAT"; time bash tests/real/components.sh' \
  > "$components_log" 2>&1 &
components_pid=$!
background_groups+=("$components_pid")

# One clang build serves the sanitizers and the fuzz targets (-DHANDOFF_FUZZ=ON instruments
# everything with ASan and UBSan, and the libraries the fuzz targets link with libFuzzer's
# coverage). It leaves out the whole-system runs' binaries, which run only in the optimised build,
# and links with lld: ld.bfd takes 4.7 s for an instrumented handoff-coordinator, lld 0.7 s.
# Unoptimised: clang at -O0 compiles this code in half the time GCC takes with the same
# sanitizers, and the sanitizers need no optimiser. At the lowest priority it takes only the CPU
# the work in front leaves idle: the builds the whole-system runs need come first. A nice value
# counts only within its session's autogroup (kernel.sched_autogroup_enabled, on by default) and
# setsid starts a new one, which would take an equal share beside the front's: the group's own
# nice (/proc/self/autogroup) is set to 19 too.
sanitize_log="$(mktemp)"
stage "build: ASan + UBSan + libFuzzer (clang, build-sanitize), in the background: log in $sanitize_log"
if [ -f build-sanitize/CMakeCache.txt ] &&
  ! grep -q '^CMAKE_CXX_COMPILER:[A-Z]*=.*clang++-14$' build-sanitize/CMakeCache.txt; then
  rm -rf build-sanitize # configured by another compiler
fi
setsid bash -c '{ echo 19 > /proc/self/autogroup; } 2> /dev/null || true
  exec nice -n 19 env CC=clang-14 CXX=clang++-14 bash -c "time { cmake -S . -B build-sanitize -G Ninja \
  -DCMAKE_BUILD_TYPE= -DHANDOFF_FUZZ=ON -DHANDOFF_WERROR=ON -DHANDOFF_UNIT_TESTS=ON \
  -DHANDOFF_WHOLE_SYSTEM_TESTS=OFF -DHANDOFF_TEST_EACH_CASE=OFF \
  -DCMAKE_EXE_LINKER_FLAGS=-fuse-ld=lld -DCMAKE_SHARED_LINKER_FLAGS=-fuse-ld=lld \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache && cmake --build build-sanitize --parallel $(nproc); }"' \
  > "$sanitize_log" 2>&1 &
sanitize_pid=$!
background_groups+=("$sanitize_pid")

stage "build: the product and the whole-system runs, optimised (warnings are errors)"
timed "the optimised build" env HANDOFF_BUILD_DIR=build bash packaging/build.sh \
  -DHANDOFF_WERROR=ON -DHANDOFF_SANITIZE=OFF \
  -DHANDOFF_UNIT_TESTS=OFF

# Once the components are built: HANDOFF_REQUIRE_REAL, and the kubeadm cluster's runs (the
# longest job after the builds) start in the background.
kubeadm_pid=""
start_kubeadm_runs() {
  stage "build: waiting for the real components"
  if ! wait "$components_pid"; then
    cat "$components_log" >&2
    echo "tests/run.sh: tests/real/components.sh failed (log above)" >&2
    exit 1
  fi
  cat "$components_log"
  rm -f "$components_log"

  # A test labelled "real" or "kubeadm" fails, rather than skips, when a component is missing.
  export HANDOFF_REQUIRE_REAL=1

  # From here the sanitizer build is what the end waits for: it takes an equal share beside the
  # whole-system runs (mostly waiting for leases and kubelets) instead of only what they leave
  # idle.
  { echo 0 > "/proc/$sanitize_pid/autogroup"; } 2> /dev/null || true

  kubeadm_log="$(mktemp)"
  stage "test: the kubeadm cluster's runs (label kubeadm), in the background: log in $kubeadm_log"
  # Their clusters (minutes of kubelets, etcd and API servers, mostly idle) come before the builds
  # and the other tests when both want the CPU (autogroup nice -5): the end waits for them.
  setsid bash -c '{ echo -5 > /proc/self/autogroup; } 2> /dev/null || true
    TIMEFORMAT="the kubeadm runs: $TIMEFORMAT"
    time ctest --test-dir build --output-on-failure --parallel 2 --label-regex "^kubeadm\$"' \
    > "$kubeadm_log" 2>&1 &
  kubeadm_pid=$!
  background_groups+=("$kubeadm_pid")
}

# With warm caches the components are already up to date (their job has ended): the kubeadm runs
# go first, beside everything else, since the end waits for them.
if ! kill -0 "$components_pid" 2> /dev/null; then start_kubeadm_runs; fi

# The model's whole-system runs and the package need no upstream component: they run while the
# Go builds finish.
stage "test: the model's whole-system runs (label sandbox), one at a time"
ctest --test-dir build --output-on-failure --label-regex '^sandbox$'

stage "test: the package and the systemd units, of the optimised build"
ctest --test-dir build --output-on-failure --label-regex '^(package|systemd)$'

[ -n "$kubeadm_pid" ] || start_kubeadm_runs

stage "test: the whole-system runs on the real components (label real), one at a time"
ctest --test-dir build --output-on-failure --label-regex '^real$'

stage "build: waiting for the sanitizer build"
if ! wait "$sanitize_pid"; then
  cat "$sanitize_log" >&2
  echo "tests/run.sh: the sanitizer build failed (log above)" >&2
  exit 1
fi
echo "the sanitizer build: $(tail -n 1 "$sanitize_log")"
rm -f "$sanitize_log"

stage "test: everything else, under ASan + UBSan, the fuzz targets' corpora included; beside them, each fuzz target for a while"
# Each fuzz target runs HANDOFF_FUZZ_SECONDS (default 20) from its seeds, two at a time; a crash,
# a hang (-timeout=10) or -rss_limit_mb=2048 exceeded fails the run and prints the input's path.
# Longer runs, optimised: tests/fuzz/README.md. They run beside the tests, in a session of their
# own at the lowest priority (autogroup and nice 19): a quarter of this stage's CPU is idle while
# the coordinator's and the agent's suites wait for leases and timeouts, and the fuzzers take
# that instead of a stage of their own after it.
fuzz_log="$(mktemp)"
setsid bash -c '{ echo 19 > /proc/self/autogroup; } 2> /dev/null || true
  exec nice -n 19 bash tests/fuzz/run_fuzzers.sh --seconds "$1" --jobs 2 build-sanitize' \
  run_fuzzers "${HANDOFF_FUZZ_SECONDS:-20}" > "$fuzz_log" 2>&1 &
fuzz_pid=$!
background_groups+=("$fuzz_pid")
# The whole-system runs (labels sandbox, real, kubeadm: minutes of real lease handovers and the
# upstream components) run in the optimised build; their parts are tested here by their own suites.
# tests/sanitizers/lsan.supp says why its one suppression is there.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  LSAN_OPTIONS="suppressions=$PWD/tests/sanitizers/lsan.supp" \
  ctest --test-dir build-sanitize --output-on-failure --parallel "$(nproc)" \
  --label-exclude '^(sandbox|real|kubeadm)$'

stage "fuzz: waiting for the fuzz targets"
fuzz_status=0
wait "$fuzz_pid" || fuzz_status=$?
cat "$fuzz_log"
rm -f "$fuzz_log"
if [ "$fuzz_status" -ne 0 ]; then
  echo "tests/run.sh: a fuzz target failed (log above)" >&2
  exit 1
fi

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
