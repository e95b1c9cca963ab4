#!/usr/bin/env bash
# `full-help.sh BINARY --help` prints BINARY's --help followed by the options of each of its
# subcommands (recursively), in the layout help2man reads: a subsection per subcommand
# ("handoffctl certs issue:") with its description and options. CLI11 prints a subcommand's
# options only in that subcommand's own --help, so help2man alone would leave the options
# operators need first (handoff-agent run --coordinator, handoffctl certs issue --node) out of the
# man page. `full-help.sh BINARY --exit-status` prints the exit codes as a help2man include file.
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
       /^(Positionals|Options):$/ {
         if (!seen_list) print ""
         list = "options"; seen_list = 1; next
       }
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

top=$("$binary" --help)
# The "Exit codes: ..." paragraph (closing the top level's help, or in its description) becomes
# an EXIT STATUS section, which help2man takes from an include file (roff: hyphens escaped, no
# line opening with a dot); the rest is the help help2man reads.
paragraph_filter='/^Exit codes: / { in_codes = 1 }
                  in_codes && (/^$/ || /^Usage:/) { in_codes = 0 }'
case "${2:-}" in
  --help)
    awk "$paragraph_filter"' !in_codes { print }' <<<"$top"
    for sub in $(subcommands <<<"$top"); do
      section "$sub"
    done
    ;;
  --exit-status)
    codes=$(awk "$paragraph_filter"' in_codes { sub(/^Exit codes: /, ""); print }' <<<"$top")
    if [ -z "$codes" ]; then
      echo "full-help.sh: $binary --help has no \"Exit codes: \" paragraph" >&2
      exit 1
    fi
    printf '[EXIT STATUS]\n'
    sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^[.']/\\\\\&&/" <<<"$codes"
    ;;
  *)
    echo "usage: full-help.sh BINARY --help|--exit-status" >&2
    exit 2
    ;;
esac
