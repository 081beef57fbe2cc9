#!/usr/bin/env bash
# Runs the crash matrix (tests/recovery/crash_matrix_crash_test.cc) over every
# crash point of several workload seeds and prints the summed counts.
#
# usage: scripts/crash-matrix.sh [build-dir] [seeds...]
#   build-dir  default build/crash-matrix (configured Release here if missing)
#   seeds      default 1 2 3 4 (each seed is ~1,150 ops x 4 fault modes ~ 4,600 points)
# The summary counts, besides the invariant violations, the crash points that
# fell inside the workload's background steps (retention, compaction, delayed
# file deletion; tests/recovery/crash_workload.h) and checks that every seed
# crashed inside each of them at least once.
# Then runs the consumer-group crash matrix once (every I/O step of a group
# workload over `__consumer_offsets`; tests/coordinator/
# group_crash_matrix_crash_test.cc) and prints its CRASH-MATRIX-GROUPS line,
# and the transaction matrix once (every I/O step of a transactional workload
# over `__transaction_state`, `__consumer_offsets` and data topics;
# tests/coordinator/transaction_crash_matrix_crash_test.cc) and prints its
# CRASH-MATRIX-TXN line.
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
ninja -C "$build" -j"$jobs" recovery_crash_tests coordinator_crash_tests >/dev/null

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

# Every seed must have crashed inside each background step.
for key in retention_points compaction_points delayed_delete_points; do
  missing="$(cat "$out"/seed-*.txt | grep '^CRASH-MATRIX' | grep -c " $key=0\b" || true)"
  if [[ "$missing" != "0" ]]; then
    echo "$key: $missing seed(s) never crashed inside this step"
    status=1
  fi
done
echo "background steps: $(cat "$out"/seed-*.txt | grep '^CRASH-MATRIX' | awk '
  { for (i = 2; i <= NF; i++) { split($i, kv, "="); s[kv[1]] += kv[2] } }
  END { printf "retention=%d compaction=%d delayed_delete=%d crash points",
              s["retention_points"], s["compaction_points"], s["delayed_delete_points"] }')"

# The consumer-group matrix (deterministic: no seed).
DARUMA_CRASH_POINTS="${DARUMA_CRASH_POINTS:-all}" \
  "$build/tests/coordinator_crash_tests" --gtest_filter='GroupCrashMatrixTest.*' \
  >"$out/groups.txt" 2>&1 || status=1
grep -h '^CRASH-MATRIX-GROUPS' "$out/groups.txt" || { echo "groups: no summary"; tail -20 "$out/groups.txt"; status=1; }
grep -h '^  [a-z_]*: ' "$out/groups.txt" | head -12 || true

# The transaction matrix (deterministic: no seed).
DARUMA_CRASH_POINTS="${DARUMA_CRASH_POINTS:-all}" \
  "$build/tests/coordinator_crash_tests" --gtest_filter='TransactionCrashMatrixTest.*' \
  >"$out/txns.txt" 2>&1 || status=1
grep -h '^CRASH-MATRIX-TXN' "$out/txns.txt" || { echo "transactions: no summary"; tail -20 "$out/txns.txt"; status=1; }
grep -h '^  [a-z_]*: ' "$out/txns.txt" | head -12 || true
exit $status
