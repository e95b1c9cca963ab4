#!/usr/bin/env bash
# The Debian package as an operator gets it: built from BUILD_DIR (`cmake --build --target
# package`), checked by lintian, its files and control data read with dpkg-deb, its man pages
# rendered, handoffctl sandbox finding its helpers where the package puts them, and a real
# install, upgrade, remove and purge with dpkg into a scratch root seeded with a node's
# manifests and handoff's state, which must come out byte-identical.
#
# Usage: package_test.sh BUILD_DIR SOURCE_DIR VERSION
set -euo pipefail

build_dir=$1
source_dir=$2
version=$3
deb=$build_dir/handoff_${version}_amd64.deb

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
started_ms=$(($(date +%s%N) / 1000000))
phase() {
  local elapsed_ms=$(($(date +%s%N) / 1000000 - started_ms))
  printf '[%4d.%01ds] %s\n' $((elapsed_ms / 1000)) $((elapsed_ms % 1000 / 100)) "$*"
}

for tool in lintian dpkg-deb dpkg-shlibdeps help2man man file; do
  command -v "$tool" >/dev/null ||
    fail "$tool is missing: packaging/install-deps.sh installs what packaging needs"
done

scratch=$(mktemp -d "${TMPDIR:-/tmp}/handoff-package-test-XXXXXX")
trap 'rm -rf "$scratch"' EXIT

phase "building the package"
rm -f "$deb"
cmake --build "$build_dir" --target package >"$scratch/package.log" 2>&1 ||
  { cat "$scratch/package.log" >&2; fail "cmake --build $build_dir --target package"; }
[ -f "$deb" ] || fail "no $deb after building the package target"
echo "$(basename "$deb"): $(stat -c %s "$deb") bytes"

phase "lintian"
lintian --fail-on error --display-info "$deb" | tee "$scratch/lintian.txt" ||
  fail "lintian reports errors on $deb"

phase "the package's files"
# Every path is root's, every file 0644 or 0755, every directory 0755.
dpkg-deb -c "$deb" >"$scratch/contents"
awk '$2 != "root/root" ||
     ($1 !~ /^-rw-r--r--$/ && $1 !~ /^-rwxr-xr-x$/ && $1 !~ /^drwxr-xr-x$/) { print; bad = 1 }
     END { exit bad }' "$scratch/contents" || fail "owner or mode not root/root 0644/0755 (above)"
! grep -q bench "$scratch/contents" || fail "a benchmark is in the package"

root=$scratch/extracted
dpkg -x "$deb" "$root"
for binary in handoff-agent handoff-coordinator handoffctl; do
  [ -x "$root/usr/bin/$binary" ] || fail "/usr/bin/$binary is missing or not executable"
  "$root/usr/bin/$binary" --help >/dev/null || fail "/usr/bin/$binary --help fails"
done
for helper in handoff-standin handoff-sandbox-kubelet handoff-sandbox-node handoff-fake-apiserver; do
  [ -x "$root/usr/lib/handoff/$helper" ] || fail "/usr/lib/handoff/$helper is missing"
  [ ! -e "$root/usr/bin/$helper" ] || fail "$helper is in /usr/bin: it is private to the sandbox"
done
file "$root/usr/bin/handoffctl" | grep -q ', stripped' || fail "/usr/bin/handoffctl is not stripped"
for unit in "$source_dir"/systemd/*.service; do
  cmp "$unit" "$root/lib/systemd/system/$(basename "$unit")" ||
    fail "/lib/systemd/system/$(basename "$unit") is not systemd/$(basename "$unit")"
done
for config in agent.yaml coordinator.yaml; do
  cmp "$source_dir/packaging/examples/$config" "$root/etc/handoff/$config" ||
    fail "/etc/handoff/$config is not packaging/examples/$config"
done
for doc in copyright changelog.gz; do
  [ -f "$root/usr/share/doc/handoff/$doc" ] || fail "/usr/share/doc/handoff/$doc is missing"
done

phase "man pages"
# Each renders without a groff warning and documents the options an operator needs first
# (subcommands' options included). Rendered in ASCII and wide, so that no option is hyphenated.
check_man_page() {
  local page=$1
  shift
  [ -f "$root/$page" ] || fail "$page is missing"
  local warnings
  warnings=$(LC_ALL=C MANWIDTH=200 man --warnings -l "$root/$page" 2>&1 >/dev/null)
  [ -z "$warnings" ] || fail "$page: man warns: $warnings"
  LC_ALL=C MANWIDTH=200 man -l "$root/$page" 2>/dev/null | col -b >"$scratch/page.txt"
  local expected
  for expected in "$@"; do
    grep -qF -- "$expected" "$scratch/page.txt" || fail "$page does not mention $expected"
  done
}
check_man_page usr/share/man/man8/handoff-agent.8.gz "EXIT STATUS" "handoff-agent run" \
  --coordinator --config --cert --node "handoff-agent apply" --to "handoff-agent recover"
check_man_page usr/share/man/man8/handoff-coordinator.8.gz "EXIT STATUS" --nodes --listen \
  --state-dir --config --settings --kubeconfig
check_man_page usr/share/man/man1/handoffctl.1.gz "EXIT STATUS" "handoffctl certs issue" \
  --operator "handoffctl status" --coordinator "handoffctl start" "handoffctl sandbox"

phase "units as installed"
# `systemd-analyze verify` on the units the package installs, with its man pages where it installs
# them (verify opens every Documentation=man: page) and its programs (verify needs each ExecStart=
# program to exist: copies name the extracted ones). Clean means no message at all.
if command -v systemd-analyze >/dev/null; then
  mkdir -p "$scratch/units"
  for unit in "$root"/lib/systemd/system/*.service; do
    sed "s|/usr/bin/handoff-|$root/usr/bin/handoff-|" "$unit" >"$scratch/units/$(basename "$unit")"
  done
  messages=$(cd "$scratch/units" && MANPATH="$root/usr/share/man" \
    systemd-analyze verify --man=yes ./*.service 2>&1) || true
  [ -z "$messages" ] || fail "systemd-analyze verify on the installed units: $messages"
else
  echo "systemd-analyze not found: the installed units are checked by tests/systemd only"
fi

phase "control data"
dpkg-deb -e "$deb" "$scratch/control"
diff <(sort "$scratch/control/conffiles") \
  <(printf '/etc/handoff/agent.yaml\n/etc/handoff/coordinator.yaml\n') ||
  fail "conffiles are not exactly /etc/handoff/agent.yaml and coordinator.yaml"
for script in postinst prerm postrm; do
  [ "$(stat -c %a "$scratch/control/$script")" = 755 ] || fail "$script is not 0755"
  # Nothing but systemd's reload and the stop on remove: no enable, no start, no file touched.
  ! grep -v '^\s*#' "$scratch/control/$script" |
    grep -E 'enable|start|rm |/etc/kubernetes|/var/lib' ||
    fail "$script does more than reload systemd or stop the daemons (above)"
done
[ "$(dpkg-deb -f "$deb" Package)" = handoff ] || fail "Package is not handoff"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "Version is not $version"
[ "$(dpkg-deb -f "$deb" Section)" = admin ] || fail "Section is not admin"
[ "$(dpkg-deb -f "$deb" Priority)" = optional ] || fail "Priority is not optional"
[ -n "$(dpkg-deb -f "$deb" Maintainer)" ] || fail "no Maintainer"
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
# The shared libraries the binaries link, as dpkg-shlibdeps names their packages.
for library in 'libc6' 'libstdc\+\+6' 'libgrpc\+\+[0-9.]+' 'libgrpc[0-9]+' 'libprotobuf[0-9]+' \
  'libsqlite3-0' 'libcurl4' 'libssl3' 'libyaml-cpp[0-9.]+' 'libabsl[0-9]+'; do
  grep -qE "(^|, )$library( |,|$)" <<<"$depends" || fail "Depends names no $library"
done
! grep -q -- '-dev' <<<"$depends" || fail "Depends names a -dev package"

phase "handoffctl sandbox finds its helpers in /usr/lib/handoff"
# A --dir that is not empty is refused right after the programs are found, before anything
# starts: the refusal says the lookup passed.
mkdir -p "$scratch/used/x"
status=0
"$root/usr/bin/handoffctl" sandbox --dir "$scratch/used" 2>"$scratch/sandbox.err" || status=$?
[ "$status" = 2 ] && grep -q "is not empty" "$scratch/sandbox.err" ||
  { cat "$scratch/sandbox.err" >&2; fail "handoffctl sandbox did not find its programs"; }
mv "$root/usr/lib/handoff/handoff-standin" "$scratch/"
status=0
"$root/usr/bin/handoffctl" sandbox --dir "$scratch/used" 2>"$scratch/sandbox.err" || status=$?
[ "$status" = 2 ] &&
  grep -qF "handoff-standin is missing: looked in $root/usr/bin and $root/usr/lib/handoff" \
    "$scratch/sandbox.err" ||
  { cat "$scratch/sandbox.err" >&2; fail "a missing helper is not named with both places"; }

phase "install, upgrade, remove and purge into a scratch root"
# dpkg --root runs the maintainer scripts chrooted into the root, which has no shell; with
# --force-script-chrootless they run here with DPKG_ROOT set, and leave the running systemd
# (which is not that root's) alone. The dependencies are this machine's, not the root's.
target=$scratch/root
mkdir -p "$target/var/lib/dpkg/info" "$target/var/lib/dpkg/updates" \
  "$target/var/lib/dpkg/triggers" "$target/etc/kubernetes/manifests" \
  "$target/var/lib/handoff/transactions" "$target/var/lib/handoff-coordinator" \
  "$target/etc/handoff/pki"
touch "$target/var/lib/dpkg/status" "$target/var/lib/dpkg/available"
printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: kube-controller-manager\n' \
  >"$target/etc/kubernetes/manifests/kube-controller-manager.yaml"
echo "a node's own state" >"$target/var/lib/handoff/x"
echo "a move's journal" >"$target/var/lib/handoff/transactions/1"
echo "the rollout's database" >"$target/var/lib/handoff-coordinator/coordinator.db"
echo "the CA's key" >"$target/etc/handoff/pki/ca.key"
chmod 0600 "$target/etc/handoff/pki/ca.key"
kept_paths=(etc/kubernetes var/lib/handoff var/lib/handoff-coordinator etc/handoff/pki)
snapshot() {
  (cd "$target" && find "${kept_paths[@]}" -printf '%p %y %m %s %T@\n' | sort &&
    find "${kept_paths[@]}" -type f -print0 | sort -z | xargs -0 sha256sum)
}
snapshot >"$scratch/before"
unchanged_after() {
  snapshot | diff "$scratch/before" - || fail "$1 changed the node's files or handoff's state"
}
dpkg_root() {
  dpkg --root="$target" --log="$scratch/dpkg.log" --force-script-chrootless --force-depends \
    --force-confdef --force-confold "$@" >>"$scratch/dpkg.out" 2>&1 ||
    { cat "$scratch/dpkg.out" >&2; fail "dpkg $*"; }
}
package_status() { dpkg-query --root="$target" -W -f '${Status} ${Version}' handoff 2>/dev/null; }

dpkg_root -i "$deb"
[ "$(package_status)" = "install ok installed $version" ] || fail "installed: $(package_status)"
[ -x "$target/usr/bin/handoff-agent" ] && [ -x "$target/usr/lib/handoff/handoff-standin" ] ||
  fail "the installed root lacks the programs"
unchanged_after "install"
echo "coordinator: cp-1.example.internal:7450  # the operator's edit" \
  >>"$target/etc/handoff/agent.yaml"
cp "$target/etc/handoff/agent.yaml" "$scratch/agent.yaml.edited"

# The next version: this package with a higher version.
dpkg-deb -R "$deb" "$scratch/next"
sed -i "s/^Version: .*/Version: ${version}+next/" "$scratch/next/DEBIAN/control"
dpkg-deb -b "$scratch/next" "$scratch/next.deb" >/dev/null
dpkg_root -i "$scratch/next.deb"
[ "$(package_status)" = "install ok installed ${version}+next" ] ||
  fail "upgraded: $(package_status)"
cmp "$scratch/agent.yaml.edited" "$target/etc/handoff/agent.yaml" ||
  fail "the upgrade replaced the operator's /etc/handoff/agent.yaml"
unchanged_after "upgrade"

dpkg_root -r handoff
[ ! -e "$target/usr/bin/handoff-agent" ] &&
  [ ! -e "$target/lib/systemd/system/handoff-agent.service" ] ||
  fail "remove left the programs or the units"
cmp "$scratch/agent.yaml.edited" "$target/etc/handoff/agent.yaml" ||
  fail "remove did not keep the operator's /etc/handoff/agent.yaml"
unchanged_after "remove"

dpkg_root -P handoff
[ ! -e "$target/etc/handoff/agent.yaml" ] && [ ! -e "$target/etc/handoff/coordinator.yaml" ] ||
  fail "purge left the configuration files"
[ -z "$(package_status)" ] || [[ "$(package_status)" == "unknown ok not-installed"* ]] ||
  fail "purged: $(package_status)"
unchanged_after "purge"

phase "maintainer scripts on this machine"
# Run as dpkg runs them on a real install (no DPKG_ROOT), with systemctl and deb-systemd-invoke
# replaced by recorders: with systemd running they reload it and stop the daemons on remove only;
# without it (a container, a chroot) they call nothing. Both end 0.
mkdir -p "$scratch/fakebin"
for command in systemctl deb-systemd-invoke; do
  printf '#!/bin/sh\necho "%s $*" >>"%s"\n' "$command" "$scratch/calls" >"$scratch/fakebin/$command"
  chmod 0755 "$scratch/fakebin/$command"
done
run_script() {
  : >"$scratch/calls"
  env -u DPKG_ROOT PATH="$scratch/fakebin:$PATH" sh "$scratch/control/$1" "${@:2}" ||
    fail "$* exits non-zero"
}
expect_calls() {
  local expected=$1
  [ -d /run/systemd/system ] || expected=""
  [ "$(cat "$scratch/calls")" = "$expected" ] ||
    fail "$2 called '$(cat "$scratch/calls")', expected '$expected'"
}
run_script postinst configure ""
expect_calls "systemctl --system daemon-reload" "postinst configure"
run_script postinst configure "$version"
expect_calls "systemctl --system daemon-reload" "postinst configure (upgrade)"
run_script prerm upgrade "${version}+next"
expect_calls "" "prerm upgrade"
run_script prerm remove
expect_calls "deb-systemd-invoke stop handoff-agent.service handoff-coordinator.service" \
  "prerm remove"
for action in remove purge upgrade; do
  run_script postrm "$action"
  expect_calls "systemctl --system daemon-reload" "postrm $action"
done

phase "passed"
