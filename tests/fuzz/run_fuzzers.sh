#!/usr/bin/env bash
# Runs every libFuzzer target of a HANDOFF_FUZZ build for a bounded time, JOBS at a time.
#
#   run_fuzzers.sh [--seconds N] [--jobs J] [--only REGEX] BUILD_DIR
#
# Each target starts from its committed seeds (tests/fuzz/corpus/<target>, read only) and the
# inputs earlier runs found (BUILD_DIR/fuzz-work/corpus/<target>, where new ones are written, so
# a longer run continues a shorter one). A crash, a timeout (-timeout seconds for one input) or an
# out-of-memory (-rss_limit_mb) fails the run; the input is saved as
# BUILD_DIR/fuzz-work/artifacts/<target>/crash-... (or timeout-, oom-, leak-) and its path
# printed with the end of the target's log. Exits 0 when every target ran clean.
set -euo pipefail

seconds=30
jobs=2
only=""
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --jobs) jobs="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    -*) echo "run_fuzzers.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
if [ $# -ne 1 ]; then
  echo "usage: run_fuzzers.sh [--seconds N] [--jobs J] [--only REGEX] BUILD_DIR" >&2
  exit 2
fi
build_dir="$(cd "$1" && pwd)"
targets_file="$build_dir/fuzz/targets.txt"
if [ ! -f "$targets_file" ]; then
  echo "run_fuzzers.sh: $targets_file missing; configure $build_dir with -DHANDOFF_FUZZ=ON" >&2
  exit 2
fi
work="$build_dir/fuzz-work"
mkdir -p "$work/logs"

# Runs one target; its exit status is libFuzzer's.
run_one() {
  local name="$1" max_len="$2" seeds="$3" dict="$4"
  local corpus="$work/corpus/$name" artifacts="$work/artifacts/$name/"
  mkdir -p "$corpus" "$artifacts"
  local dict_option=()
  if [ "$dict" != "-" ]; then dict_option=("-dict=$dict"); fi
  "$build_dir/fuzz/$name" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 \
    -max_len="$max_len" "${dict_option[@]}" -artifact_prefix="$artifacts" -print_final_stats=1 \
    "$corpus" "$seeds" > "$work/logs/$name.log" 2>&1
}

# Prints one line per target: executions, executions per second, peak RSS.
summarize() {
  local name="$1" status="$2" log="$work/logs/$1.log"
  local runs speed rss
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n1)
  printf '%-26s %s  %10s runs  %7s exec/s  %5s MB\n' "$name" \
    "$([ "$status" -eq 0 ] && echo ok || echo FAILED)" "${runs:-?}" "${speed:-?}" "${rss:-?}"
}

declare -A pids=()
failed=()
# Waits for whichever running target ends first (bash 5.1's wait -n -p) and reports it.
reap_one() {
  local pid="" status=0
  wait -n -p pid "${!pids[@]}" || status=$?
  local name="${pids[$pid]}"
  unset "pids[$pid]"
  summarize "$name" "$status"
  if [ "$status" -ne 0 ]; then
    failed+=("$name")
    echo "---- $name failed (exit $status); end of $work/logs/$name.log:" >&2
    tail -n 40 "$work/logs/$name.log" >&2
    for artifact in "$work/artifacts/$name"/*; do
      [ -e "$artifact" ] && echo "reproducer: $artifact (run: $build_dir/fuzz/$name $artifact)" >&2
    done
  fi
}

echo "fuzzing each target for ${seconds}s, $jobs at a time; logs in $work/logs"
while read -r name max_len seeds dict; do
  [ -n "$name" ] || continue
  if [ -n "$only" ] && ! [[ "$name" =~ $only ]]; then continue; fi
  while [ "${#pids[@]}" -ge "$jobs" ]; do reap_one; done
  rm -rf "$work/artifacts/$name"
  run_one "$name" "$max_len" "$seeds" "$dict" &
  pids[$!]="$name"
done < "$targets_file"
while [ "${#pids[@]}" -gt 0 ]; do reap_one; done

if [ "${#failed[@]}" -gt 0 ]; then
  echo "run_fuzzers.sh: failed: ${failed[*]} (reproducers above)" >&2
  exit 1
fi
