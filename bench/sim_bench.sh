#!/usr/bin/env bash
# Wall time and peak memory of the engines on the shipped 4096-device runs, one
# run per process (SimGrid allows one engine per process), each the whole
# command. Prints figures, asserts nothing; run it alone on the machine.
# Usage: bench/sim_bench.sh [build dir with cli/shardlab, default build/release]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(realpath "${1:-build/release}/cli/shardlab")"
times="$(mktemp)"
trap 'rm -f "$times"' EXIT
measure() {
  local label=$1
  shift
  /usr/bin/time -f "%e %M" -o "$times" "$bin" "$@" > /dev/null
  read -r wall rss < "$times"
  printf '%-64s %7.2f s %5.0f MiB\n' "$label" "$wall" "$(awk -v k="$rss" 'BEGIN{print k/1024}')"
}
printf '%-64s %9s %9s\n' "case" "wall" "peak RSS"
measure "GPT-3 175B, 4096 Ascend 910, TP8 PP16 DP32, SimGrid" simulate configs/runs/gpt3-175b-ascend-4096.json \
  --engine simgrid
measure "  same, every device simulated (--symmetry off)" simulate configs/runs/gpt3-175b-ascend-4096.json \
  --engine simgrid --symmetry off
measure "  same, analytical" simulate configs/runs/gpt3-175b-ascend-4096.json --engine analytical
measure "  same with MicroBatchInterleaved 2, SimGrid" simulate configs/runs/gpt3-175b-ascend-4096-interleaved.json \
  --engine simgrid
measure "GPT-3 175B, 4096 H100, TP8 PP16 DP32, SimGrid" simulate configs/runs/gpt3-175b-h100-4096.json --engine simgrid
measure "  same, every device simulated (--symmetry off)" simulate configs/runs/gpt3-175b-h100-4096.json \
  --engine simgrid --symmetry off
measure "  same, analytical" simulate configs/runs/gpt3-175b-h100-4096.json --engine analytical
measure "ResNet-50 data parallel, 4096 Ascend 910, SimGrid" simulate configs/runs/resnet50-ascend-4096.json \
  --engine simgrid
measure "AllReduce 1 GiB over 4096 Ascend 910, hierarchical" collective --op allreduce --bytes 1GiB --ranks 4096 \
  --cluster configs/clusters/ascend910-atlas900.json
measure "AllReduce 1 GiB over 4096 Ascend 910, flat ring" collective --op allreduce --bytes 1GiB --ranks 4096 \
  --cluster configs/clusters/ascend910-atlas900.json --algo ring
measure "tune-fusion ResNet-50, 4096 Ascend 910" tune-fusion configs/runs/resnet50-ascend-4096.json
measure "tune-fusion BERT-large, 512 Ascend 910" tune-fusion configs/runs/bert-large-ascend-512.json
measure "tune-fusion GPT-3 175B, 4096 Ascend 910, --op reducescatter" tune-fusion \
  configs/runs/gpt3-175b-ascend-4096.json --op reducescatter
