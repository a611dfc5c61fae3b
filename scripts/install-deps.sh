#!/usr/bin/env bash
# Installs the Debian 12 packages shardlab needs to build, test and run.
# Idempotent: when every package is present it installs nothing and prints one line.
# Runs as root, or through sudo otherwise.
set -euo pipefail

packages=(
  # build and required libraries
  cmake g++ make pkg-config
  nlohmann-json3-dev libfmt-dev libspdlog-dev libcli11-dev libeigen3-dev
  libsimgrid-dev catch2 libbenchmark-dev
  # sanitizer and fuzz builds of the core
  clang-14 libclang-rt-14-dev
  # optional parts: GUI, CPU executor, MPI sweeps
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev libgl-dev libxkbcommon-dev
  # the GUI in a real window under test: X platform plugin, virtual display, input
  qt6-qpa-plugins xvfb xauth xdotool
  libgloo-dev libopenmpi-dev openmpi-bin
  # the benchmark scripts (bench/*.sh) and the docs check that runs them: /usr/bin/time
  time
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=()
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "install-deps: not root and sudo missing; install: ${missing[*]}" >&2; exit 1; }
  sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
