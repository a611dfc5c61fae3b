#!/usr/bin/env bash
# Rewrites the figures of README.md and docs/ from what the programs print now:
# every output block (a `$ shardlab ...` or benchmark line with its output) and
# every figure in prose listed in docs/figures.json, then docs/validation.md.
# ctest's docs/figures fails while they differ (timings within docs/figures.json's
# timing_factor). Timings within that factor stay as documented unless
# --timings is given, which rewrites every one from this run. Review
# `git diff README.md docs` before committing. Timings come from the build given
# (default build/test); run it alone on the machine.
# Usage: scripts/update-docs.sh [--timings] [build dir]
set -euo pipefail
cd "$(dirname "$0")/.."
mode=--update
if [ "${1:-}" = --timings ]; then
  mode=--refresh
  shift
fi
build=${1:-build/test}
cmake --build "$build" -j"$(nproc)" --target doc_figures shardlab
"$build/tests/doc_figures" "$mode" . "$build"
scripts/refresh-validation-doc.sh "$build"
git status --short README.md docs
