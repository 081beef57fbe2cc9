#!/usr/bin/env bash
# Runs the corruption matrix (tests/recovery/corruption_matrix_crash_test.cc)
# for many seeds and prints its counts (per outcome and per file kind). The
# summary line also counts the operator tools on each damaged copy:
# check_reported / check_silent_harmless / check_missed (`daruma check`), and
# repair_fixed / repair_refused / repair_failed (`daruma repair`, no limit,
# then check and a start-up recovery on the result), and repair_cut (plans
# that cut a log at a batch whose baseOffset or partitionLeaderEpoch, fields
# outside the batch CRC, contradicts its neighbours).
# Seeds 401-1400: scripts/corruption-matrix.sh build/x 1000 401
#
# usage: scripts/corruption-matrix.sh [build-dir] [seeds] [first-seed]
#   build-dir   default build/crash-matrix (configured Release here if missing)
#   seeds       default 1000 (half on a clean-shutdown dir, half on a dir
#               whose recovery point is 0, so recovery scans every segment)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build/crash-matrix}"
seeds="${2:-1000}"
first="${3:-1}"
jobs="${JOBS:-2}"

if [[ ! -f "$build/build.ninja" ]]; then
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDARUMA_BUILD_BENCH=OFF \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
fi
ninja -C "$build" -j"$jobs" recovery_crash_tests >/dev/null

set +e
DARUMA_CORRUPTION_SEEDS="$seeds" DARUMA_CORRUPTION_FIRST_SEED="$first" \
  "$build/tests/recovery_crash_tests" --gtest_filter='CorruptionMatrixTest.*' 2>&1 |
  sed -n '/^CORRUPTION-MATRIX/,/^\[/p' | grep -v '^\['
exit "${PIPESTATUS[0]}"
