#!/usr/bin/env bash
# Installs what is missing, builds everything and runs every test:
#   1. the full build (Release with assertions) and its ctest suite: unit tests
#      of every folder and end-to-end runs of the CLI;
#   2. the core again under AddressSanitizer + UndefinedBehaviorSanitizer (clang),
#      with its unit tests and a short libFuzzer smoke run of the config loader.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs=$(nproc)

echo "== build and test (build/test)"
cmake -S . -B build/test -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build/test -j"$jobs"
ctest --test-dir build/test --output-on-failure -j"$jobs"

echo "== core under ASan+UBSan, config fuzz smoke (build/sanitize)"
CC=clang-14 CXX=clang++-14 cmake -S . -B build/sanitize -DCMAKE_BUILD_TYPE=Debug \
  -DSHARDLAB_CORE_ONLY=ON -DSHARDLAB_SANITIZE=ON -DSHARDLAB_FUZZ=ON >/dev/null
cmake --build build/sanitize -j"$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/sanitize --output-on-failure -j"$jobs"
echo "== all tests passed"
