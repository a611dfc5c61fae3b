#!/usr/bin/env bash
# Wall time and peak memory of the SimGrid engine at 4096 devices, one run per
# process (SimGrid allows one engine per process). Prints figures, asserts nothing.
# Usage: bench/sim_bench.sh [build dir with cli/shardlab, default build/release]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build/release}/cli/shardlab"
measure() {
  local label=$1; shift
  /usr/bin/time -f "%e %M" -o /tmp/shardlab-bench.$$ "$bin" "$@" > /dev/null
  read -r wall rss < /tmp/shardlab-bench.$$
  printf '%-62s %8.2f s %8.1f MiB\n' "$label" "$wall" "$(awk -v k="$rss" 'BEGIN{print k/1024}')"
}
printf '%-62s %10s %12s\n' "case" "wall" "peak RSS"
measure "GPT-3 175B, 4096 Ascend 910, TP8 PP16 DP32, simgrid" simulate configs/runs/gpt3-175b-ascend-4096.json --engine simgrid
measure "GPT-3 175B, 4096 Ascend 910, simgrid, --symmetry off" simulate configs/runs/gpt3-175b-ascend-4096.json \
  --engine simgrid --symmetry off
measure "GPT-3 175B, 4096 H100, TP8 PP16 DP32, simgrid" simulate configs/runs/gpt3-175b-h100-4096.json --engine simgrid
measure "GPT-3 175B, 4096 H100, simgrid, --symmetry off" simulate configs/runs/gpt3-175b-h100-4096.json \
  --engine simgrid --symmetry off
measure "GPT-3 175B, 4096 H100, analytical" simulate configs/runs/gpt3-175b-h100-4096.json --engine analytical
measure "GPT-3 175B, 4096 Ascend 910, analytical" simulate configs/runs/gpt3-175b-ascend-4096.json --engine analytical
measure "ResNet-50 data parallel, 4096 Ascend 910, simgrid" simulate configs/runs/resnet50-ascend-4096.json --engine simgrid
measure "AllReduce 1 GiB over 4096 Ascend 910 (hierarchical)" collective --op allreduce --bytes 1GiB --ranks 4096 \
  --cluster configs/clusters/ascend910-atlas900.json
measure "AllReduce 1 GiB over 4096 Ascend 910 (flat ring)" collective --op allreduce --bytes 1GiB --ranks 4096 \
  --cluster configs/clusters/ascend910-atlas900.json --algo ring
measure "GPT-3 175B, 4096 Ascend 910, MicroBatchInterleaved 2, simgrid" simulate \
  configs/runs/gpt3-175b-ascend-4096-interleaved.json --engine simgrid
measure "tune-fusion ResNet-50, 4096 Ascend 910 (SimGrid verification)" tune-fusion \
  configs/runs/resnet50-ascend-4096.json
measure "tune-fusion BERT-large, 512 Ascend 910 (SimGrid verification)" tune-fusion \
  configs/runs/bert-large-ascend-512.json
measure "tune-fusion GPT-3 175B, 4096 Ascend 910, --op reducescatter" tune-fusion \
  configs/runs/gpt3-175b-ascend-4096.json --op reducescatter
rm -f /tmp/shardlab-bench.$$
