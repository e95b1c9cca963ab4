#!/usr/bin/env bash
# Installs the Debian 12 packages handoff builds and tests with (run as root). Every library comes
# from Debian; README.md "Dependencies" says why each one is here.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config
  libyaml-cpp-dev          # static pod manifests, settings, LeaderMigrationConfiguration
  libabsl-dev              # absl::Status / StatusOr: errors as values
  libspdlog-dev            # logging
  libcli11-dev             # command lines and --help
  nlohmann-json3-dev       # status -o json; Kubernetes objects on the wire
  libdtl-dev               # unified diffs of planned files
  libcurl4-openssl-dev     # health checks of restarted components; the Kubernetes API client
  # The fake Kubernetes API server (TLS, client certificates), which ships for the sandbox (no
  # longer test-only), and the tests' local HTTPS endpoints; OpenSSL also reads certificate names.
  libcpp-httplib-dev libssl-dev
  libpugixml-dev           # the EC2 API's XML answers (the instance's cluster tag)
  # gRPC and Protobuf: the coordinator's API to its agents and operators (proto/handoff/v1).
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libsqlite3-dev           # the coordinator's rollout state and audit history
  # libsystemd: sd_notify (Type=notify readiness, watchdog, status) and journald logging.
  libsystemd-dev
  # Both daemons' /metrics: prometheus-cpp (core and its civetweb pull exposer); promtool (from
  # prometheus) checks the exposition in the tests.
  prometheus-cpp-dev prometheus
  libgtest-dev libgmock-dev
  # systemd-analyze: tests/common/systemd checks handoff's reading of the kubelet's unit files
  # against the real systemd's.
  systemd
  # The Debian package (packaging/package.cmake, tests/packaging): man pages from --help,
  # dpkg-shlibdeps for its Depends, lintian to check it, man to render the pages in the test.
  help2man dpkg-dev lintian man-db
  # The fuzz targets (tests/fuzz): clang with libFuzzer and the sanitizers' runtimes.
  clang-14 libclang-rt-14-dev
  lld                      # links that build: six times faster than ld.bfd on its binaries
  # The real upstream components of `handoffctl sandbox --cluster real|kubeadm` and the tests
  # labelled "real" and "kubeadm" (tests/real/components.sh builds the Kubernetes ones with Go and
  # the fake AWS with pip): a venv for the fake AWS (moto); for the kubeadm cluster's nodes, the
  # container runtime (containerd and runc), the load balancer in front of the API servers
  # (haproxy), ip for the nodes' network, util-linux for nsenter-style tools, the reference CNI
  # plugins for each node's pod network (so its Node is Ready).
  python3-venv containerd runc haproxy iproute2 containernetworking-plugins
  # Caches the C++ compilations of tests/run.sh's builds across runs.
  ccache
)

missing=()
for package in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" ||
    missing+=("$package")
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-deps: missing ${missing[*]}; run this script as root (it uses apt-get)" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
