#!/usr/bin/env bash
# The main job: install what is missing, build in Release and simulate one
# training step of GPT-3 175B on 4096 Ascend 910 NPUs from a shipped config.
# Extra arguments go to `shardlab simulate` (e.g. --trace trace.json).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF >/dev/null
cmake --build build/release -j"$(nproc)" --target shardlab
exec ./build/release/cli/shardlab simulate configs/runs/gpt3-175b-ascend-4096.json "$@"
