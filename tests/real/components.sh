#!/usr/bin/env bash
# Builds the real upstream components that `handoffctl sandbox --cluster real|kubeadm` and the
# tests labelled `real` and `kubeadm` run, at pinned versions, into the components dir, and records
# every version used:
#
#   ${HANDOFF_COMPONENTS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/handoff/components}/
#     bin/kube-apiserver, kube-controller-manager,      k8s.io/kubernetes v1.26.13
#         kube-scheduler, kubelet, kubeadm                (tests/real/kube126/go.mod)
#     kube127/bin/kube-apiserver, kube-controller-manager, kube-scheduler, kubeadm, kubelet at
#                                                       v1.27.16 (tests/real/kube127/go.mod): the
#                                                       control plane the agents move the nodes
#                                                       to, the kubeadm that upgrades and joins
#                                                       after, the kubelet a moved worker runs
#     bin/aws-cloud-controller-manager,                 k8s.io/cloud-provider-aws v1.27.2
#         ecr-credential-provider                       (tests/real/ccm127/go.mod)
#     bin/etcd                                          go.etcd.io/etcd v3.5.10 (tests/real/etcd35)
#     bin/crictl                                        sigs.k8s.io/cri-tools (tests/real/critools)
#     bin/pause                                         tests/real/images/pause.c, gcc -static
#     bin/handoff-fake-aws                              tests/real/fake_aws.py on moto, in venv/
#     images/kubeadm-images.tar                         every image the kubeadm sandbox's nodes
#                                                       run, one docker-archive for
#                                                       `ctr images import` (images.txt lists them)
#     images/worker-images.tar                          what its workers run: the pause image and
#                                                       the workload, named as an ECR image
#     versions.txt                                      name<TAB>version<TAB>source, one line each
#
# A component is rebuilt only when what it is built from changed (its pins, its build flags, the Go
# version): a second run builds nothing. Each binary is built into a temporary file and renamed into
# place, so an interrupted build never leaves a half-written binary.
#
# Usage: bash tests/real/components.sh [--print-dir]
#   --print-dir   print the components dir and exit (nothing is built)
# Needs: Go (1.24 or newer: cri-tools v1.34 asks for it) with the Go module proxy, gcc with a
# static libc, Python 3 with venv and PyPI (packaging/install-deps.sh installs python3-venv).
# Go, C and Python build and run these upstream components and fixtures only; handoff is C++.
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
mkdir -p "$dir/bin" "$dir/kube127/bin" "$dir/images" "$dir/stamps"

# kube-apiserver and kube-controller-manager 1.26: the last release with the in-tree AWS provider.
# v1.26.13 is the newest 1.26 patch whose every staging module the Go module proxy serves
# (k8s.io/controller-manager and k8s.io/kube-controller-manager v0.26.14 and v0.26.15 are refused).
kube_version=v1.26.13
# Version N+1 of the kubeadm sandbox's control plane (its staging modules at v0.27.16 are served).
kube_next_version=v1.27.16
ccm_version=v1.27.2         # the newest v1.27 k8s.io/cloud-provider-aws the proxy serves
etcd_version=v3.5.10        # what kubeadm v1.26.13 pins: registry.k8s.io/etcd:3.5.10-0
etcd_image_tag=3.5.10-0
crictl_version=v1.34.0      # the oldest cri-tools the proxy serves; works with containerd 1.6
pause_image_tag=3.9         # kubeadm v1.26.13's pause image
coredns_image_tag=v1.9.3    # kubeadm v1.26.13's CoreDNS image (pulled by its preflight, never run)
coredns_next_image_tag=v1.10.1 # kubeadm v1.27.16's (pulled by `kubeadm upgrade` and join, never run)
# The kubeadm sandbox's workload on each worker: an image of the node's own ECR registry (the fake
# AWS's account, moto's default), so that the kubelet's credential provider is the one it needs.
workload_image=123456789012.dkr.ecr.us-east-1.amazonaws.com/handoff-sandbox/workload:v1
# The fake AWS's Python packages, pinned with the ones moto's server pulls in; pytest runs its tests.
python_pins=(
  "moto[server]==5.2.1" boto3==1.43.11 botocore==1.43.11 Flask==3.1.3 flask-cors==6.0.2
  Werkzeug==3.1.8 pytest==9.2.0
)

if ! command -v go > /dev/null; then
  echo "components.sh: Go is missing: install Go 1.24 or newer (this machine's image has Go 1.26)" >&2
  exit 1
fi
go_version="$(go env GOVERSION)"
# cri-tools v1.34 needs Go 1.24 (its go.mod); Debian 12's own golang is 1.19.
go_minor="$(echo "$go_version" | sed -n 's/^go1\.\([0-9]*\).*/\1/p')"
if [ -z "$go_minor" ] || [ "$go_minor" -lt 24 ]; then
  echo "components.sh: $go_version is too old: install Go 1.24 or newer" >&2
  exit 1
fi
if ! command -v gcc > /dev/null; then
  echo "components.sh: gcc is missing (the pause image's program): packaging/install-deps.sh" >&2
  exit 1
fi
# No DWARF from the compiler either (the linker's -w drops it anyway): a tenth less CPU for the
# same binaries (crictl with a cold cache: 151 s instead of 168 s).
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -trimpath -buildvcs=false -gcflags=all=-dwarf=false"
# The compiler and linker collect no garbage until a process holds 3 GiB: an eighth less CPU
# (crictl with a cold cache: 137 CPU-s instead of 157; 1 GiB at most in any one process), and two
# processes at a time stay well inside the machine's memory beside the C++ builds.
export GOGC=off GOMEMLIMIT=3GiB
# The go.sum files beside the go.mod files pin every module's checksum, so no checksum database is
# consulted (it does not list some of these k8s.io versions).
export GONOSUMDB="k8s.io/*" GOTOOLCHAIN=local

log() { printf '[components %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }

# up_to_date NAME KEY OUTPUT...: whether NAME was built from KEY and its outputs (paths under the
# components dir) are all there.
up_to_date() {
  local name=$1 key=$2
  shift 2
  [ -f "$dir/stamps/$name" ] && [ "$(cat "$dir/stamps/$name")" = "$key" ] || return 1
  local output
  for output in "$@"; do [ -f "$dir/$output" ] || return 1; done
}

# What a build depends on, as one hash: its pin files, how it is built ($recipe and $tags, set by
# the caller) and the Go version.
key_of() {
  { cat "$@"; echo "$recipe${tags:+ -tags=$tags} $go_version $GOFLAGS $CGO_ENABLED"; } | sha256sum | cut -d' ' -f1
}

# The file `go build -o DIR/` writes for a command package: its last path element, or the one
# before a major-version suffix (go.etcd.io/etcd/server/v3 → server).
go_command_name() {
  local name
  name="$(basename "$1")"
  if [[ "$name" =~ ^v[0-9]+$ ]]; then name="$(basename "$(dirname "$1")")"; fi
  echo "$name"
}

# [tags=TAG,...] go_build NAME MODULE_DIR OUT_DIR LDFLAGS PACKAGE[=FILE]...: builds the packages'
# commands from the module in MODULE_DIR (its go.mod and go.sum are the pins) with the build tags
# `tags` into OUT_DIR (under the components dir), each as FILE when given, unless NAME was built
# from the same pins and flags already.
go_build() {
  local name=$1 module=$2 out=$3 recipe="-ldflags=-s -w $4" tags="${tags:-}"
  shift 4
  local packages=() built=() outputs=() spec
  for spec in "$@"; do
    packages+=("${spec%%=*}")
    built+=("$(go_command_name "${spec%%=*}")")
    if [[ "$spec" == *=* ]]; then outputs+=("$out/${spec#*=}"); else outputs+=("$out/${built[-1]}"); fi
  done
  local key
  key="$(key_of "$module/go.mod" "$module/go.sum")"
  if up_to_date "$name" "$key" "${outputs[@]}"; then
    log "${outputs[*]}: up to date"
    return
  fi
  log "building ${outputs[*]} (minutes on 2 cores with a cold cache)"
  local tmp i
  tmp="$(mktemp -d "$dir/$out/.build-XXXXXX")"
  (cd "$module" && go build "$recipe" -tags="$tags" -o "$tmp/" "${packages[@]}")
  for i in "${!packages[@]}"; do mv -f "$tmp/${built[$i]}" "$dir/${outputs[$i]}"; done
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

# The pause image's program: a static binary, so that the image holds one file.
build_pause() {
  local source="$here/images/pause.c" recipe="gcc -static -O2" key
  key="$({ cat "$source"; echo "$recipe $(gcc -dumpfullversion)"; } | sha256sum | cut -d' ' -f1)"
  if up_to_date pause "$key" bin/pause; then
    log "bin/pause: up to date"
    return
  fi
  gcc -static -O2 -Wall -Wextra -Werror -o "$dir/bin/.pause.tmp" "$source"
  mv -f "$dir/bin/.pause.tmp" "$dir/bin/pause"
  echo "$key" > "$dir/stamps/pause"
}

# Every image a kubeadm sandbox node runs, named as kubeadm v1.26.13 (`kubeadm config images
# list`) and handoff's settings name them, in one archive a node imports at once. kube-proxy and
# CoreDNS are skipped addons that kubeadm's preflight pulls anyway: the pause program stands in
# for them, and nothing ever runs them.
build_images() {
  local k126="$dir/bin" k127="$dir/kube127/bin" specs=() component
  for component in kube-apiserver kube-controller-manager kube-scheduler; do
    specs+=("registry.k8s.io/$component:$kube_version=$k126/$component=/usr/local/bin/$component")
    specs+=("registry.k8s.io/$component:$kube_next_version=$k127/$component=/usr/local/bin/$component")
  done
  specs+=(
    "registry.k8s.io/etcd:$etcd_image_tag=$dir/bin/etcd=/usr/local/bin/etcd"
    "registry.k8s.io/pause:$pause_image_tag=$dir/bin/pause=/pause=entrypoint"
    "registry.k8s.io/kube-proxy:$kube_version=$dir/bin/pause=/usr/local/bin/kube-proxy"
    "registry.k8s.io/coredns/coredns:$coredns_image_tag=$dir/bin/pause=/coredns=entrypoint"
    "registry.k8s.io/kube-proxy:$kube_next_version=$dir/bin/pause=/usr/local/bin/kube-proxy"
    "registry.k8s.io/coredns/coredns:$coredns_next_image_tag=$dir/bin/pause=/coredns=entrypoint"
    # The AWS image runs its binary as the entrypoint (cloud-provider-aws Dockerfile).
    "registry.k8s.io/provider-aws/cloud-controller-manager:$ccm_version=$dir/bin/aws-cloud-controller-manager=/bin/aws-cloud-controller-manager=entrypoint"
  )
  local key
  key="$({ printf '%s\n' "${specs[@]}"; cat "$here/images/image_archive.sh" "$dir"/stamps/{kube,kube127,ccm,etcd,pause}; } | sha256sum | cut -d' ' -f1)"
  if up_to_date images "$key" images/kubeadm-images.tar images/images.txt; then
    log "images/kubeadm-images.tar: up to date"
    return
  fi
  log "assembling the kubeadm sandbox's images"
  bash "$here/images/image_archive.sh" "$dir/images/kubeadm-images.tar" "${specs[@]}"
  printf '%s\n' "${specs[@]}" | cut -d= -f1 > "$dir/images/.images.txt.tmp"
  mv -f "$dir/images/.images.txt.tmp" "$dir/images/images.txt"
  echo "$key" > "$dir/stamps/images"
}

# What a kubeadm sandbox worker runs, in an archive of its own (a worker imports a few MB, not every
# control-plane image): the pause image and the workload, the pause program under an ECR name.
build_worker_images() {
  local specs=(
    "registry.k8s.io/pause:$pause_image_tag=$dir/bin/pause=/pause=entrypoint"
    "$workload_image=$dir/bin/pause=/workload=entrypoint"
  )
  local key
  key="$({ printf '%s\n' "${specs[@]}"; cat "$here/images/image_archive.sh" "$dir"/stamps/pause; } | sha256sum | cut -d' ' -f1)"
  if up_to_date worker-images "$key" images/worker-images.tar; then
    log "images/worker-images.tar: up to date"
    return
  fi
  bash "$here/images/image_archive.sh" "$dir/images/worker-images.tar" "${specs[@]}"
  echo "$key" > "$dir/stamps/worker-images"
}

install_fake_aws() {
  local key
  key="$(printf '%s\n' "${python_pins[@]}" | cat - "$here/fake_aws.py" | sha256sum | cut -d' ' -f1)"
  if up_to_date fake-aws "$key" bin/handoff-fake-aws; then
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

kube_commands=(kube-apiserver kube-controller-manager kube-scheduler kubelet kubeadm)
go_build kube "$here/kube126" bin "$(version_stamp "$kube_version")" \
  "${kube_commands[@]/#/k8s.io/kubernetes/cmd/}"
# Of version N+1 the control plane's images and kubeadm (`kubeadm upgrade apply|node` after the
# move, and `kubeadm join --control-plane` at 1.27), and the kubelet: the nodes keep their 1.26
# kubelet, which kubeadm 1.27 accepts (one minor older than the control plane), but a moved worker
# proves that a 1.27 kubelet runs on it, and an unmoved one that it refuses --cloud-provider=aws.
# Built with upstream's `providerless` build tag: 1.27 has no in-tree AWS provider left
# (kubernetes PR #115838), so these components run with --cloud-provider=external wherever the
# nodes are AWS's, and the tag leaves out only the GCE, Azure and vSphere providers and volume
# plugins, which nothing here would run (kube-controller-manager 114 → 70 MB).
kube_next_commands=(kube-apiserver kube-controller-manager kube-scheduler kubeadm kubelet)
tags=providerless go_build kube127 "$here/kube127" kube127/bin "$(version_stamp "$kube_next_version")" \
  "${kube_next_commands[@]/#/k8s.io/kubernetes/cmd/}"
# The credential provider a moved worker's kubelet runs for ECR images, from the same module at
# the same version as the cloud-controller-manager (as cloud-provider-aws releases them).
go_build ccm "$here/ccm127" bin "$(version_stamp "$ccm_version")" \
  k8s.io/cloud-provider-aws/cmd/aws-cloud-controller-manager \
  k8s.io/cloud-provider-aws/cmd/ecr-credential-provider
go_build etcd "$here/etcd35" bin "" go.etcd.io/etcd/server/v3=etcd
go_build critools "$here/critools" bin "-X sigs.k8s.io/cri-tools/pkg/version.Version=$crictl_version" \
  sigs.k8s.io/cri-tools/cmd/crictl
build_pause
build_images
build_worker_images
install_fake_aws

moto_version="$("$dir/venv/bin/python3" -c 'import moto; print(moto.__version__)')"
{
  for component in "${kube_commands[@]}"; do
    printf '%s\t%s\tk8s.io/kubernetes@%s (%s)\n' "$component" "$kube_version" "$kube_version" \
      "$go_version"
  done
  for component in "${kube_next_commands[@]}"; do
    printf '%s\t%s\tk8s.io/kubernetes@%s (%s)\n' "$component" "$kube_next_version" \
      "$kube_next_version" "$go_version"
  done
  for component in aws-cloud-controller-manager ecr-credential-provider; do
    printf '%s\t%s\tk8s.io/cloud-provider-aws@%s (%s)\n' "$component" "$ccm_version" \
      "$ccm_version" "$go_version"
  done
  printf 'etcd\t%s\tgo.etcd.io/etcd/server/v3@%s (%s)\n' "$etcd_version" "$etcd_version" "$go_version"
  printf 'crictl\t%s\tsigs.k8s.io/cri-tools@%s (%s)\n' "$crictl_version" "$crictl_version" "$go_version"
  printf 'pause\t%s\ttests/real/images/pause.c (gcc -static)\n' "$pause_image_tag"
  printf 'moto\t%s\tPyPI (the fake EC2 API; instance metadata by tests/real/fake_aws.py)\n' "$moto_version"
} > "$dir/versions.txt.tmp"
mv -f "$dir/versions.txt.tmp" "$dir/versions.txt"
log "components ready in $dir"
cat "$dir/versions.txt" >&2
