#!/usr/bin/env bash
# Writes one docker-archive tarball holding several one-layer images, each a single static binary,
# for `ctr -n k8s.io images import`: the kubeadm sandbox's images, assembled without a registry.
#
# Usage: bash image_archive.sh OUT SPEC...
#   SPEC  NAME:TAG=BINARY=PATH[=entrypoint]
#         the image NAME:TAG (as a manifest names it: registry.k8s.io/kube-apiserver:v1.26.13)
#         holds BINARY at PATH (absolute, inside the image); PATH is also on the image's $PATH, so
#         a manifest's `command: [kube-apiserver]` finds it, and with "=entrypoint" it is the
#         image's entrypoint (the cloud-controller-manager image runs its binary with args only).
# Each layer is an uncompressed tar of one file, owned by root, with fixed times, so the same
# binary always gives the same image id. OUT is written through a temporary file and renamed.
# Test fixture only: handoff itself is C++.
set -euo pipefail
if [ $# -lt 2 ]; then
  echo "usage: image_archive.sh OUT NAME:TAG=BINARY=PATH[=entrypoint]..." >&2
  exit 2
fi
out=$1
shift
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
manifest="["
for spec in "$@"; do
  IFS='=' read -r tag binary path entry <<< "$spec"
  if [ -z "$tag" ] || [ ! -x "$binary" ] || [ "${path#/}" = "$path" ]; then
    echo "image_archive.sh: bad spec $spec (NAME:TAG=BINARY=/PATH[=entrypoint], BINARY executable)" >&2
    exit 2
  fi
  rootfs="$work/rootfs"
  rm -rf "$rootfs"
  mkdir -p "$rootfs$(dirname "$path")"
  cp "$binary" "$rootfs$path"
  chmod 0755 "$rootfs$path"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$work/layer.tar" -C "$rootfs" .
  diff_id="$(sha256sum "$work/layer.tar" | cut -d' ' -f1)"
  mkdir -p "$work/archive/$diff_id"
  mv "$work/layer.tar" "$work/archive/$diff_id/layer.tar"
  entrypoint="null"
  [ "$entry" = "entrypoint" ] && entrypoint="[\"$path\"]"
  config="{\"architecture\":\"amd64\",\"os\":\"linux\",\"created\":\"1970-01-01T00:00:00Z\",\
\"config\":{\"Env\":[\"PATH=$(dirname "$path"):/usr/local/bin:/usr/bin:/bin\"],\"Entrypoint\":$entrypoint},\
\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:$diff_id\"]}}"
  config_id="$(printf '%s' "$config" | sha256sum | cut -d' ' -f1)"
  printf '%s' "$config" > "$work/archive/$config_id.json"
  [ "$manifest" = "[" ] || manifest+=","
  manifest+="{\"Config\":\"$config_id.json\",\"RepoTags\":[\"$tag\"],\"Layers\":[\"$diff_id/layer.tar\"]}"
done
printf '%s]' "$manifest" > "$work/archive/manifest.json"
tmp="$(dirname "$out")/.$(basename "$out").tmp"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -cf "$tmp" -C "$work/archive" .
mv -f "$tmp" "$out"
