#!/usr/bin/env bash
# Installs the Debian packages Daruma needs to build, test and benchmark.
# Idempotent: does nothing (and needs no network) when everything is present.
# Usage: scripts/install-deps.sh [--bench]   (--bench adds BENCH_PACKAGES, the
# plotting needs of bench/run, which calls it that way; the default install
# does not need them)
set -euo pipefail

PACKAGES=(
  build-essential g++ cmake ninja-build pkg-config
  zlib1g-dev libsnappy-dev liblz4-dev libzstd-dev
  libasio-dev libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev
  python3
)
# Real Kafka clients, used by the broker's compatibility tests.
CLIENT_PACKAGES=(kcat librdkafka-dev python3-kafka python3-confluent-kafka)
# Plots of bench/run (PNG), installed only with --bench.
BENCH_PACKAGES=(python3-matplotlib)
if [[ "${1:-}" == "--bench" ]]; then CLIENT_PACKAGES+=("${BENCH_PACKAGES[@]}"); fi

missing=()
for p in "${PACKAGES[@]}" "${CLIENT_PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
