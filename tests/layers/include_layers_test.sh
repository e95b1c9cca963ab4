#!/bin/bash
# include_layers.sh on small trees of its own: an include down a floor or within one passes; one up
# a floor fails, named by file and line.
set -euo pipefail
# Every check reads the output from a here-string: `echo "$out" | grep -q` fails under pipefail when
# grep has its line and exits before echo's second write (bash writes this output in two), and echo
# dies of SIGPIPE: it failed so in CI.
script="$(cd "$(dirname "$0")" && pwd)/include_layers.sh"
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
mkdir -p "$tree/common/base" "$tree/proto/rpc" "$tree/agent/engine" "$tree/coordinator/server" \
  "$tree/rehearsal/sandbox" "$tree/ctl"
echo '#include "common/base/a.h"' >"$tree/proto/rpc/b.h"
printf '#include <string>\n#include "proto/rpc/b.h"\n#include "common/base/a.h"\n' \
  >"$tree/agent/engine/c.cc"
echo '#include "agent/engine/c.h"' >"$tree/coordinator/server/d.cc"
echo '#include "coordinator/server/d.h"' >"$tree/rehearsal/sandbox/f.cc"
echo '#include "rehearsal/sandbox/f.h"' >"$tree/ctl/g.cc"
touch "$tree/common/base/a.h"

out=$(bash "$script" "$tree") || { echo "FAIL: a tree with no upward include was refused: $out"; exit 1; }
grep -q "none runs up a floor" <<<"$out" || { echo "FAIL: unexpected output: $out"; exit 1; }

printf '// the engine\n  #include "coordinator/server/d.h"\n' >>"$tree/agent/engine/c.cc"
echo '#include "proto/rpc/b.h"' >"$tree/common/base/e.cc"
echo '#include "ctl/g.h"' >>"$tree/rehearsal/sandbox/f.cc"
status=0
out=$(bash "$script" "$tree") || status=$?
[ "$status" -eq 1 ] || { echo "FAIL: exit $status on three upward includes: $out"; exit 1; }
grep -qx 'agent/engine/c.cc:5: agent includes coordinator/server/d.h (coordinator is above it)' <<<"$out" ||
  { echo "FAIL: agent -> coordinator not named: $out"; exit 1; }
grep -qx 'common/base/e.cc:1: common includes proto/rpc/b.h (proto is above it)' <<<"$out" ||
  { echo "FAIL: common -> proto not named: $out"; exit 1; }
grep -qx 'rehearsal/sandbox/f.cc:2: rehearsal includes ctl/g.h (ctl is above it)' <<<"$out" ||
  { echo "FAIL: rehearsal -> ctl not named: $out"; exit 1; }
grep -q '^include_layers: 3 include(s) run up a floor' <<<"$out" ||
  { echo "FAIL: count not reported: $out"; exit 1; }
echo "include_layers_test: passed"
