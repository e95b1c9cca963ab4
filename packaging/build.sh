#!/usr/bin/env bash
# Configures and builds handoff into build/ (binaries in build/bin/). Extra arguments go to cmake's
# configure step, e.g. -DHANDOFF_WERROR=ON or -DHANDOFF_SANITIZE=ON. Compilations go through
# ccache when it is installed (packaging/install-deps.sh installs it), so a second build of the
# same sources compiles nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${HANDOFF_BUILD_DIR:-build}
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@"
cmake --build "$build_dir" --parallel "$(nproc)"
