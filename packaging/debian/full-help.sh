#!/usr/bin/env bash
# Prints BINARY's --help followed by the options of each of its subcommands (recursively), in the
# layout help2man reads: a section per subcommand ("handoffctl certs issue:") holding its
# description and its options. CLI11 prints a subcommand's options only in that subcommand's own
# --help, so help2man alone would leave the operators' most used options (handoff-agent run
# --coordinator, handoffctl certs issue --node) out of the man page.
set -euo pipefail
binary=$1

# The names listed under "Subcommands:" in a --help text.
subcommands() {
  awk '/^Subcommands:/ { listing = 1; next }
       listing && /^  [^ ]/ { print $1; next }
       listing && /^[^ ]/ { listing = 0 }' 
}

# One subcommand's section: its description, then its options, without its usage line (the
# synopsis is the top level's) and without the exit codes (the same for every subcommand).
section() {
  local words=("$@")
  local help
  help=$("$binary" "${words[@]}" --help)
  printf '\n%s %s:\n' "$(basename "$binary")" "${words[*]}"
  awk '/^Usage:/ { next }
       /^(Positionals|Options):$/ { if (!seen_list) print ""; list = "options"; seen_list = 1; next }
       /^Subcommands:$/ { list = "subcommands"; seen_list = 1; next }
       /^$/ { list = ""; next }
       list == "options" && !/^  -h,--help / { print; next }
       list != "" { next }
       !seen_list { print "  " $0 }' <<<"$help"
  local sub
  for sub in $(subcommands <<<"$help"); do
    section "${words[@]}" "$sub"
  done
}

if [ "${2:-}" != "--help" ]; then
  echo "usage: full-help.sh BINARY --help" >&2
  exit 2
fi
top=$("$binary" --help)
printf '%s\n' "$top"
for sub in $(subcommands <<<"$top"); do
  section "$sub"
done
