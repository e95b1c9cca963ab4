#!/usr/bin/env bash
# Configures and builds handoff into build/ (binaries in build/bin/). Extra arguments go to cmake's
# configure step, e.g. -DHANDOFF_WERROR=ON or -DHANDOFF_SANITIZE=ON. Compilations go through
# ccache when it is installed (packaging/install-deps.sh installs it), so a second build of the
# same sources compiles nothing. ccache caches a source compiled with a precompiled header only when
# told that the header's macro definitions and __TIME__ do not matter (CMakeLists.txt HANDOFF_PCH).
set -euo pipefail
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros}"
cd "$(dirname "$0")/.."
build_dir=${HANDOFF_BUILD_DIR:-build}
launcher=()
if command -v ccache > /dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" "$@"
cmake --build "$build_dir" --parallel "$(nproc)"
