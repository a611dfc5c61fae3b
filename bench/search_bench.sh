#!/usr/bin/env bash
# Wall time and peak memory of the strategy searches, one process per run.
# Prints figures, asserts nothing. Usage: bench/search_bench.sh [build dir, default build/release]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build/release}/cli/shardlab"
measure() {
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o /tmp/shardlab-search-bench.$$ "$bin" "$@" --json > /tmp/shardlab-search-out.$$
  read -r wall rss < /tmp/shardlab-search-bench.$$
  local step
  step=$(grep -o '"step_seconds": [0-9.e+-]*' /tmp/shardlab-search-out.$$ | tail -1 | awk '{printf "%.4g", $2}')
  printf '%-62s %7.2f s %7.1f MiB   step %s s\n' "$label" "$wall" "$(awk -v k="$rss" 'BEGIN{print k/1024}')" "$step"
}
printf '%-62s %9s %11s\n' "case" "wall" "peak RSS"
measure "dynamic_programming, BERT-large, 8 devices (exact)" search bench/runs/bert-large-dp-8.json
measure "dynamic_programming, BERT-large, 64 devices (exact)" search bench/runs/bert-large-dp-64.json
measure "dynamic_programming, BERT-large, 512 devices (32 candidates)" search bench/runs/bert-large-dp-512.json
measure "dynamic_programming, BERT-large, 512 devices, time cost model" search bench/runs/bert-large-dp-512.json \
  --cost-model time
measure "recursive_programming, GPT-3 175B, 4096 devices (16 x 256)" search bench/runs/gpt3-175b-rec-4096.json
measure "sharding_propagation, GPT-3 175B, weight MatMuls configured" search \
  bench/runs/gpt3-175b-propagation-4096.json
measure "semi_auto (hand-written Megatron), GPT-3 175B, 4096 devices" search configs/runs/gpt3-175b-ascend-4096.json
rm -f /tmp/shardlab-search-bench.$$ /tmp/shardlab-search-out.$$
