#!/usr/bin/env bash
# The scale curve of one model on H100 clusters of 512 to 131,072 GPUs, data
# parallel grown with the cluster, each point a whole `shardlab simulate`
# command, with SimGrid (symmetric devices folded) and with the analytical
# engine: wall time, peak RSS and the step.
#   gpt3:   GPT-3 175B, tensor parallel 8, 16 pipeline stages, 32 micro-batches,
#           global batch 64 per data-parallel replica;
#   llama3: LLaMA-3.1 405B as configs/runs/llama3-405b-h100-16384.json lays it
#           out (TP 8 with sequence parallelism, context parallel 2, 16 stages,
#           8192-token sequences, one per replica and micro-batch, 32 micro-batches).
# One process per point (SimGrid allows one engine per process); run alone on
# the machine. Prints the start-up cost, then the figures; asserts nothing.
# Usage: bench/scale_bench.sh [build dir with cli/shardlab, default build/release] [largest device count] [gpt3|llama3]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(realpath "${1:-build/release}/cli/shardlab")"
largest="${2:-131072}"
model="${3:-gpt3}"
case "$model" in gpt3 | llama3) ;; *) echo "scale_bench.sh: unknown model $model (gpt3 or llama3)" >&2; exit 2 ;; esac
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# DGX H100 servers (configs/clusters/dgx-h100-ndr.json) on a rail-optimised
# three-level fat tree of radix-128 switches, which connects the 131,072 NICs
# of the largest point (radix-64 switches stop at 65,536).
run_file() {
  local n=$1 dp model_part
  if [ "$model" = gpt3 ]; then
    dp=$((n / 128))
    model_part='"model": "'$PWD'/configs/models/gpt3-175b.json",
  "model_params": {"data_parallel": '$dp', "model_parallel": 8},
  "parallel": {"parallel_mode": "semi_auto_parallel", "full_batch": true, "device_num": '$n', "pipeline_stages": 16,
    "micro_batch_num": 32, "global_batch_size": '$((dp * 64))', "enable_parallel_optimizer": true, "recompute": true}'
  else
    dp=$((n / 256))
    model_part='"model": "'$PWD'/configs/models/hf/Llama-3.1-405B/config.json", "stack": "megatron",
  "model_params": {"data_parallel": '$dp', "model_parallel": 8, "context_parallel": 2, "use_seq_parallel": true,
    "dtype": "bfloat16", "offset": [0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0]},
  "parallel": {"parallel_mode": "semi_auto_parallel", "full_batch": true, "device_num": '$n', "pipeline_stages": 16,
    "micro_batch_num": 32, "global_batch_size": '$((dp * 32))', "enable_parallel_optimizer": true,
    "parallel_optimizer_config": {"gradient_accumulation_shard": false}}'
  fi
  cat > "$work/$model-$n.json" <<JSON
{
  "name": "$model-h100-$n",
  "cluster": {
    "name": "h100-ndr-$n", "servers": $((n / 8)), "devices_per_server": 8,
    "device": {"kind": "gpu", "model": "H100-SXM5-80GB",
      "peak_flops": {"float16": "989 TFLOP/s", "bfloat16": "989 TFLOP/s", "float32": "67 TFLOP/s"},
      "memory": "80 GB", "memory_bandwidth": "3.35 TB/s", "compute_efficiency": 0.7, "memory_efficiency": 0.85,
      "kernel_overhead": "5 us"},
    "host": {"cpu_flops": "14 TFLOP/s", "memory": "2 TB", "memory_bandwidth": "614 GB/s",
      "pcie_bandwidth": "64 GB/s", "pcie_latency": "2 us"},
    "intra_server": {"kind": "nvswitch", "link_bandwidth": "450 GB/s", "latency": "2 us"},
    "inter_server": {"nic_bandwidth": "400 Gb/s", "nics_per_server": 8, "topology": "fat_tree", "levels": 3,
      "switch_radix": 128, "oversubscription": 1, "rail_optimized": true, "link_latency": "0.7 us",
      "switch_latency": "0.13 us"}
  },
  $model_part
}
JSON
  echo "$work/$model-$n.json"
}

# Prints "wall_s rss_MiB step_s detail" of one simulate command,
# "refused seconds" when the engine refuses the step (SimGrid past its limit
# of simulated work: the seconds it estimated), or "error" (its stderr shown).
measure() {
  local run=$1 engine=$2
  # Runs past MindSpore's device_num limit warn on stderr; the figures are on stdout.
  if ! /usr/bin/time -f "%e %M" -o "$work/time" "$bin" simulate "$run" --engine "$engine" --json > "$work/out.json" \
    2> "$work/err"; then
    if ! grep -q 'would take about' "$work/err"; then
      cat "$work/err" >&2
      printf 'error'
      return
    fi
    printf 'refused %s' "$(grep -o 'take about [0-9]* s' "$work/err" | tr -dc '0-9')"
    return
  fi
  read -r wall rss < "$work/time"
  local step devices
  step=$(grep -o '"step_seconds": [0-9.e+-]*' "$work/out.json" | tail -1 | awk '{print $2}')
  devices=$(grep -o '"simulated_devices": [0-9]*' "$work/out.json" | tail -1 | tr -dc '0-9')
  printf '%s %s %s %s' "$wall" "$(awk -v k="$rss" 'BEGIN{printf "%.0f", k/1024}')" "$step" "${devices:--}"
}

# Start-up: what every command pays before its work (the back ends load on demand).
start=$(date +%s%N)
for _ in $(seq 20); do "$bin" --version > /dev/null; done
elapsed=$(($(date +%s%N) - start))
/usr/bin/time -f "%M" -o "$work/time" "$bin" --version > /dev/null
printf 'start-up: shardlab --version %.1f ms (mean of 20), %d MiB peak RSS\n\n' \
  "$(awk -v ns="$elapsed" 'BEGIN{print ns / 20 / 1e6}')" "$(awk '{printf "%.0f", $1/1024}' "$work/time")"

printf '%8s | %9s %9s %9s %10s | %9s %9s %9s\n' devices "sg wall" "sg RSS" "sg step" "simulated" "an wall" "an RSS" \
  "an step"
for n in 512 1024 2048 4096 8192 16384 32768 65536 131072; do
  [ "$n" -le "$largest" ] || break
  run=$(run_file "$n")
  read -r sw sr ss sd <<< "$(measure "$run" simgrid)"
  read -r aw ar as _ <<< "$(measure "$run" analytical)"
  if [ "$sw" = error ] || [ "$aw" = error ]; then
    echo "bench/scale_bench.sh: simulate failed at $n devices" >&2
    exit 1
  fi
  if [ "$sw" = refused ]; then
    printf '%8d | %-40s | %7.2f s %5d MiB %7.3f s\n' "$n" "refused (about ${sr:-?} s of SimGrid work)" "$aw" "$ar" "$as"
    continue
  fi
  printf '%8d | %7.2f s %5d MiB %7.3f s %10s | %7.2f s %5d MiB %7.3f s\n' "$n" "$sw" "$sr" "$ss" "$sd" "$aw" "$ar" "$as"
done
