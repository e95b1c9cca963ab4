#!/usr/bin/env bash
# Configures and builds handoff into build/ (binaries in build/bin/). Extra arguments go to cmake's
# configure step, e.g. -DHANDOFF_WERROR=ON or -DHANDOFF_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${HANDOFF_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@"
cmake --build "$build_dir" --parallel "$(nproc)"
