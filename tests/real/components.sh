#!/usr/bin/env bash
# Builds the real upstream components that `handoffctl sandbox --cluster real` and the tests labelled
# `real` run, at pinned versions, into the components dir, and records every version used:
#
#   ${HANDOFF_COMPONENTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/handoff/components}/
#     bin/kube-apiserver, bin/kube-controller-manager   k8s.io/kubernetes (tests/real/kube126/go.mod)
#     bin/aws-cloud-controller-manager                  k8s.io/cloud-provider-aws (tests/real/ccm127/go.mod)
#     bin/etcd                                          Debian's etcd-server
#     bin/handoff-fake-aws                              tests/real/fake_aws.py on moto, in venv/
#     versions.txt                                      name<TAB>version<TAB>source, one line each
#
# A component is rebuilt only when what it is built from changed (its pins, its build flags, the Go
# version): a second run builds nothing. Each binary is built into a temporary file and renamed into
# place, so an interrupted build never leaves a half-written binary.
#
# Usage: bash tests/real/components.sh [--print-dir]
#   --print-dir   print the components dir and exit (nothing is built)
# Needs: Go (1.26 here) with the Go module proxy, Python 3 with venv and PyPI, and Debian's
# etcd-server (packaging/install-deps.sh installs it and python3-venv). Go and Python build and run these upstream components only; handoff is C++.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${HANDOFF_COMPONENTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/handoff/components}"
if [ "${1:-}" = "--print-dir" ]; then
  echo "$dir"
  exit 0
fi
if [ $# -gt 0 ]; then
  echo "components.sh: unknown argument $1 (see the comment at the top of $0)" >&2
  exit 2
fi
mkdir -p "$dir/bin" "$dir/stamps"

# kube-apiserver and kube-controller-manager 1.26: the last release with the in-tree AWS provider.
# v1.26.13 is the newest 1.26 patch whose every staging module the Go module proxy serves
# (k8s.io/controller-manager and k8s.io/kube-controller-manager v0.26.14 and v0.26.15 are refused).
kube_version=v1.26.13
ccm_version=v1.27.2         # the newest v1.27 k8s.io/cloud-provider-aws the proxy serves
# The fake AWS's Python packages, pinned with the ones moto's server pulls in; pytest runs its tests.
python_pins=(
  "moto[server]==5.2.1" boto3==1.43.11 botocore==1.43.11 Flask==3.1.3 flask-cors==6.0.2
  Werkzeug==3.1.8 pytest==9.2.0
)

if ! command -v go > /dev/null; then
  echo "components.sh: Go is missing: install Go 1.21 or newer (this machine's image has Go 1.26)" >&2
  exit 1
fi
go_version="$(go env GOVERSION)"
# cloud-provider-aws v1.27 needs Go 1.20 (its go.mod); Debian 12's own golang is 1.19.
go_minor="$(echo "$go_version" | sed -n 's/^go1\.\([0-9]*\).*/\1/p')"
if [ -z "$go_minor" ] || [ "$go_minor" -lt 20 ]; then
  echo "components.sh: $go_version is too old: install Go 1.20 or newer" >&2
  exit 1
fi
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -trimpath -buildvcs=false"
# The go.sum files beside the go.mod files pin every module's checksum, so no checksum database is
# consulted (it does not list some of these k8s.io versions).
export GONOSUMDB="k8s.io/*" GOTOOLCHAIN=local

log() { printf '[components %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# up_to_date NAME KEY: whether NAME was built from KEY and its outputs are all there.
up_to_date() {
  local name=$1 key=$2
  shift 2
  [ -f "$dir/stamps/$name" ] && [ "$(cat "$dir/stamps/$name")" = "$key" ] || return 1
  local output
  for output in "$@"; do [ -x "$dir/bin/$output" ] || return 1; done
}

# What a build depends on, as one hash: its pin files, how it is built ($recipe, set by the
# caller) and the Go version.
key_of() { { cat "$@"; echo "$recipe $go_version $GOFLAGS $CGO_ENABLED"; } | sha256sum | cut -d' ' -f1; }

# go_build NAME MODULE_DIR LDFLAGS PACKAGE...: builds the packages' commands from the module in
# MODULE_DIR (its go.mod and go.sum are the pins) into bin/, unless NAME was built from the same
# pins and flags already.
go_build() {
  local name=$1 module=$2 recipe="-ldflags=-s -w $3"
  shift 3
  local outputs=() package
  for package in "$@"; do outputs+=("$(basename "$package")"); done
  local key
  key="$(key_of "$module/go.mod" "$module/go.sum")"
  if up_to_date "$name" "$key" "${outputs[@]}"; then
    log "${outputs[*]}: up to date"
    return
  fi
  log "building ${outputs[*]} (minutes on 2 cores with a cold cache)"
  local tmp output
  tmp="$(mktemp -d "$dir/bin/.build-XXXXXX")"
  (cd "$module" && go build "$recipe" -o "$tmp/" "$@")
  for output in "${outputs[@]}"; do mv -f "$tmp/$output" "$dir/bin/"; done
  rmdir "$tmp"
  echo "$key" > "$dir/stamps/$name"
}

# The version the binaries report (--version, /version), as a release build stamps it.
version_stamp() {
  local version=$1 minor
  minor="$(echo "$version" | cut -d. -f2)"
  echo "-X k8s.io/component-base/version.gitVersion=$version" \
    "-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor" \
    "-X k8s.io/component-base/version.gitTreeState=clean" \
    "-X k8s.io/client-go/pkg/version.gitVersion=$version"
}

install_etcd() {
  if ! command -v etcd > /dev/null; then
    echo "components.sh: etcd is missing: install Debian's etcd-server (packaging/install-deps.sh)" >&2
    exit 1
  fi
  ln -sfn "$(command -v etcd)" "$dir/bin/etcd"
}

install_fake_aws() {
  local key
  key="$(printf '%s\n' "${python_pins[@]}" | cat - "$here/fake_aws.py" | sha256sum | cut -d' ' -f1)"
  if up_to_date fake-aws "$key" handoff-fake-aws; then
    log "fake AWS (moto): up to date"
    return
  fi
  log "installing the fake AWS: ${python_pins[*]} in $dir/venv"
  [ -x "$dir/venv/bin/python3" ] || python3 -m venv "$dir/venv"
  "$dir/venv/bin/pip" install --quiet --disable-pip-version-check "${python_pins[@]}"
  local tmp="$dir/bin/.handoff-fake-aws.tmp"
  { echo "#!$dir/venv/bin/python3"; tail -n +2 "$here/fake_aws.py"; } > "$tmp"
  chmod 0755 "$tmp"
  mv -f "$tmp" "$dir/bin/handoff-fake-aws"
  echo "$key" > "$dir/stamps/fake-aws"
}

go_build kube "$here/kube126" "$(version_stamp "$kube_version")" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
go_build ccm "$here/ccm127" "$(version_stamp "$ccm_version")" \
  k8s.io/cloud-provider-aws/cmd/aws-cloud-controller-manager
install_etcd
install_fake_aws

etcd_version="$("$dir/bin/etcd" --version | sed -n 's/^etcd Version: //p')"
moto_version="$("$dir/venv/bin/python3" -c 'import moto; print(moto.__version__)')"
{
  printf 'kube-apiserver\t%s\tk8s.io/kubernetes@%s (%s)\n' "$kube_version" "$kube_version" "$go_version"
  printf 'kube-controller-manager\t%s\tk8s.io/kubernetes@%s (%s)\n' "$kube_version" "$kube_version" "$go_version"
  printf 'aws-cloud-controller-manager\t%s\tk8s.io/cloud-provider-aws@%s (%s)\n' "$ccm_version" \
    "$ccm_version" "$go_version"
  printf 'etcd\tv%s\tDebian etcd-server\n' "$etcd_version"
  printf 'moto\t%s\tPyPI (the fake EC2 API; instance metadata by tests/real/fake_aws.py)\n' "$moto_version"
} > "$dir/versions.txt.tmp"
mv -f "$dir/versions.txt.tmp" "$dir/versions.txt"
log "components ready in $dir"
cat "$dir/versions.txt" >&2
