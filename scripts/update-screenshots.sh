#!/usr/bin/env bash
# Regenerates every GUI screenshot in docs/ from the current build, headless:
# each view (pipeline, strategy, devices, tensor, memory, links) of three shipped runs
# (GPT-3 175B on 4096 H100, LLaMA-2 70B on 1024 H100, PanGu-alpha 13B on 512
# Ascend 910) at 1600x1000 and 1024x700, into docs/images/gui/<run>/<view>-<size>.png,
# and the window test's references (tests/gui/references) when Xvfb is here.
# Review the images' diff before committing.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build/test}
cmake --build "$build" -j"$(nproc)" --target shardlab shardlab-gui gui_image_tool
gui=$build/gui/shardlab-gui
results=$(mktemp -d)
trap 'rm -rf "$results"' EXIT
# The operator each run's devices and tensor views show: one of attention's
# projections, split both ways.
declare -A runs=(
  [gpt3-175b-h100-4096]=layer0/attention/query
  [llama2-70b-h100-1024]=layer0/attention/qkv
  [pangu-alpha-13b-ascend-512]=layer0/attention/query
)
for run in "${!runs[@]}"; do
  out=docs/images/gui/$run
  mkdir -p "$out"
  for size in 1600x1000 1024x700; do
    for view in pipeline strategy devices tensor memory; do
      "$gui" --screenshot "$out/$view-$size.png" --view "$view" --op "${runs[$run]}" --size "$size" \
        "configs/runs/$run.json" 2> >(grep -v XDG_RUNTIME_DIR >&2)
    done
    # Link usage comes from SimGrid: a result of `simulate --engine simgrid`.
    [[ -f $results/$run.json ]] || "$build/cli/shardlab" simulate "configs/runs/$run.json" --engine simgrid \
      --out "$results/$run.json" >/dev/null
    "$gui" --screenshot "$out/links-$size.png" --view links --size "$size" "$results/$run.json" \
      2> >(grep -v XDG_RUNTIME_DIR >&2)
  done
done
if command -v Xvfb >/dev/null && command -v xdotool >/dev/null; then
  tests/gui/window_test.sh "$gui" "$build/tests/gui_image_tool" "$PWD" --update
fi
git status --short docs/images tests/gui/references
