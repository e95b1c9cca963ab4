#!/bin/bash
# The house's floors, from the bottom up: common/ (what every part uses), proto/ (the wire
# contract and the vocabulary on it), agent/ (the node side), coordinator/ (the cluster side),
# rehearsal/ (the sandbox and what stands in for a cluster in it), ctl/ (handoffctl, which opens
# the rehearsal too). A source may include headers of its own floor and those below, never one
# above. tests/ and bench/ stand on top and may include anything.
#
# Usage: tests/layers/include_layers.sh [REPO]   (default: the checkout this script is in)
# Prints every include that runs up a floor, as FILE:LINE: FLOOR includes HEADER (FLOOR'); exit 1
# when there is one, 0 otherwise.
set -euo pipefail
repo=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$repo"
floors=(common proto agent coordinator rehearsal ctl)

# A floor's height by its folder name; one lookup per include, no process per line (a fork per
# include took the check past its minute on a loaded machine).
declare -A floor_of
for i in "${!floors[@]}"; do floor_of[${floors[$i]}]=$i; done
include_pattern='#[[:space:]]*include[[:space:]]+"([^"]+)"'

found=0
checked=0
for from in "${floors[@]}"; do
  [[ -d $from ]] || continue
  from_floor=${floor_of[$from]}
  while IFS= read -r hit; do
    # FILE:LINE:#include "TOP/..."
    file=${hit%%:*}
    rest=${hit#*:}
    line=${rest%%:*}
    [[ $rest =~ $include_pattern ]] || continue
    header=${BASH_REMATCH[1]}
    top=${header%%/*}
    to_floor=${floor_of[$top]:--1}
    checked=$((checked + 1))
    if ((to_floor > from_floor)); then
      echo "$file:$line: $from includes $header ($top is above it)"
      found=$((found + 1))
    fi
  done < <(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"[a-z_]+/' "$from" \
             --include='*.h' --include='*.cc' --include='*.cpp' || true)
done
if ((found > 0)); then
  echo "include_layers: $found include(s) run up a floor (floors from the bottom: ${floors[*]})"
  exit 1
fi
echo "include_layers: $checked project includes in ${floors[*]}: none runs up a floor"
