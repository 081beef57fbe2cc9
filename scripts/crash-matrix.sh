#!/usr/bin/env bash
# Runs the crash matrix (tests/recovery/crash_matrix_crash_test.cc) over every
# crash point of several workload seeds and prints the summed counts.
#
# usage: scripts/crash-matrix.sh [build-dir] [seeds...]
#   build-dir  default build/crash-matrix (configured Release here if missing)
#   seeds      default 1 2 3 4 (each seed is ~740 ops x 4 fault modes ~ 3,000 points)
# env: DARUMA_CRASH_POINTS=all|<count> per seed (default all), JOBS (default 2)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build/crash-matrix}"
shift || true
seeds=("$@")
[[ ${#seeds[@]} -eq 0 ]] && seeds=(1 2 3 4)
jobs="${JOBS:-2}"

if [[ ! -f "$build/build.ninja" ]]; then
  export CCACHE_BASEDIR="$root" CCACHE_NOHASHDIR=true
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DDARUMA_BUILD_BENCH=OFF \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/dev/null
fi
ninja -C "$build" -j"$jobs" recovery_crash_tests >/dev/null

out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
status=0
for seed in "${seeds[@]}"; do
  DARUMA_CRASH_POINTS="${DARUMA_CRASH_POINTS:-all}" DARUMA_CRASH_SEED="$seed" \
    "$build/tests/recovery_crash_tests" --gtest_filter='CrashMatrixTest.*' \
    >"$out/seed-$seed.txt" 2>&1 || status=1
  grep -h '^CRASH-MATRIX' "$out/seed-$seed.txt" || { echo "seed $seed: no summary"; tail -20 "$out/seed-$seed.txt"; }
  grep -h '^  [a-z_]*: ' "$out/seed-$seed.txt" | head -12 || true
done

# Sum every key=value count over the seeds.
cat "$out"/seed-*.txt | grep '^CRASH-MATRIX' | awk '
  { for (i = 2; i <= NF; i++) { split($i, kv, "="); if (kv[1] != "seed") sum[kv[1]] += kv[2]; if (!(kv[1] in seen)) { seen[kv[1]] = 1; order[++n] = kv[1] } } }
  END { printf "TOTAL"; for (i = 1; i <= n; i++) if (order[i] != "seed") printf " %s=%d", order[i], sum[order[i]]; printf "\n" }'
exit $status
