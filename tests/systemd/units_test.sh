#!/usr/bin/env bash
# The units in systemd/: `systemd-analyze verify` is clean, and no unit's `systemd-analyze
# security` exposure is above the figure systemd/README.md records for it ("now" column).
# verify needs each ExecStart= program to exist, so it runs on copies whose /usr/bin/handoff-agent
# and /usr/bin/handoff-coordinator are the build's; and it opens each Documentation=man: page with
# man(1), so it runs with MANPATH holding the build's man pages where the package installs them
# (man1/, man8/). Exit 77 (skipped) without systemd-analyze or man.
# Usage: units_test.sh SYSTEMD_DIR HANDOFF_AGENT HANDOFF_COORDINATOR MAN_PAGES_DIR
set -euo pipefail
units_dir=$1
agent=$2
coordinator=$3
man_pages=$4

if ! command -v systemd-analyze >/dev/null; then
  echo "systemd-analyze not found (Debian's systemd package): skipped"
  exit 77
fi

if ! command -v man >/dev/null; then
  echo "man not found (Debian's man-db package): skipped"
  exit 77
fi

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# The man pages as the package installs them: each NAME.SECTION.gz in manSECTION/.
for page in "$man_pages"/*.[0-9].gz; do
  [ -e "$page" ] || { echo "no man pages in $man_pages" >&2; exit 1; }
  section=${page%.gz}
  section=${section##*.}
  mkdir -p "$scratch/man/man$section"
  cp "$page" "$scratch/man/man$section/"
done
units=(handoff-agent.service handoff-coordinator.service handoff-agent-recover.service)
for unit in "${units[@]}"; do
  sed -e "s|/usr/bin/handoff-agent |$agent |" -e "s|/usr/bin/handoff-coordinator |$coordinator |" \
    "$units_dir/$unit" >"$scratch/$unit"
  if grep -q '/usr/bin/handoff' "$scratch/$unit"; then
    echo "$unit: an ExecStart= program this test does not map to the build's" >&2
    exit 1
  fi
done

failed=0
# Clean: not only exit 0, no message either (verify exits 0 on warnings).
if ! messages=$(cd "$scratch" &&
  MANPATH="$scratch/man" systemd-analyze verify --man=yes "${units[@]/#/./}" 2>&1) ||
  [ -n "$messages" ]; then
  echo "systemd-analyze verify is not clean:" >&2
  echo "$messages" >&2
  failed=1
fi

for unit in "${units[@]}"; do
  # The row "| <unit> | <before> | <now> |" of the README's table.
  recorded=$(awk -F'|' -v unit="$unit" \
    '{ gsub(/ /, "", $2); gsub(/ /, "", $4) } $2 == unit { print $4 }' "$units_dir/README.md")
  if ! [[ $recorded =~ ^[0-9]+\.[0-9]$ ]]; then
    echo "$unit: no exposure figure recorded in $units_dir/README.md" >&2
    failed=1
    continue
  fi
  # --threshold takes the exposure in tenths (0-100).
  threshold=${recorded/./}
  threshold=$((10#$threshold))
  if ! report=$(systemd-analyze security --offline=true --threshold="$threshold" \
    "$units_dir/$unit" 2>&1); then
    echo "$unit: exposure above the recorded $recorded:" >&2
    echo "$report" | tail -n 1 >&2
    failed=1
  else
    echo "$report" | tail -n 1
  fi
done
exit "$failed"
