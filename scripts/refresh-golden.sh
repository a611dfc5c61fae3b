#!/usr/bin/env bash
# Rewrites tests/golden/<run>.json from the current build: every shipped run's
# analytical step. Run it after a change that moves figures on purpose, then
# review `git diff tests/golden` and commit it with the change that caused it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/test}
cmake --build "$build" -j"$(nproc)" --target cli_e2e_tests shardlab
SHARDLAB_REFRESH_GOLDEN=1 "$build/tests/cli_e2e_tests" "every shipped run's analytical step matches its golden result"
git status --short tests/golden
