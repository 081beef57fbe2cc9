#!/usr/bin/env bash
# Builds the `fuzz` preset (clang, libFuzzer, ASan+UBSan) and runs every fuzz
# target (fuzz/*_fuzz.cc) for the given number of seconds, seeded with the
# shared fixtures' .log files (linked, never copied). New corpus entries go to
# build/fuzz/corpus/<target>, findings (crash-*, leak-*, timeout-*) to
# build/fuzz/findings/<target>.
#
# Usage: scripts/fuzz.sh [seconds-per-target (default 20)] [target ...]
# Environment: FUZZ_JOBS (build parallelism, default 2), FUZZ_MAX_LEN (default
# 65536), FUZZ_ARGS (extra libFuzzer flags).
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true

if [[ $# -gt 0 ]]; then
  targets=("$@")
else
  targets=()
  for src in fuzz/*_fuzz.cc; do targets+=("$(basename "${src%.cc}")"); done
fi

set -e
cmake --preset fuzz >/dev/null
cmake --build build/fuzz -j "${FUZZ_JOBS:-2}" --target "${targets[@]}"
fuzz/seed_corpus.sh build/fuzz/seeds
set +e

status=0
for target in "${targets[@]}"; do
  corpus=build/fuzz/corpus/$target
  findings=build/fuzz/findings/$target
  log=build/fuzz/$target.log
  mkdir -p "$corpus" "$findings"
  stamp=$(mktemp)
  echo "== $target: ${seconds}s"
  # shellcheck disable=SC2086
  "build/fuzz/fuzz/$target" "$corpus" build/fuzz/seeds -max_total_time="$seconds" \
    -max_len="${FUZZ_MAX_LEN:-65536}" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$findings/" -print_final_stats=1 ${FUZZ_ARGS:-} >"$log" 2>&1
  rc=$?
  execs=$(grep -m1 '^stat::number_of_executed_units' "$log" | awk '{print $2}')
  rate=$(grep -m1 '^stat::average_exec_per_sec' "$log" | awk '{print $2}')
  cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+' || true)
  found=$(find "$findings" -type f -newer "$stamp" | wc -l)
  echo "   executions: ${execs:-?} (${rate:-?}/s), ${cov:-cov: ?}, corpus: $(ls "$corpus" | wc -l)," \
    "findings: $found (exit $rc; log $log)"
  if [[ $rc -ne 0 || $found -gt 0 ]]; then
    status=1
    grep -E 'ERROR: |SUMMARY: |runtime error' "$log" | head -5 | sed 's/^/   /'
    find "$findings" -type f -newer "$stamp" | head -5 | sed 's/^/   finding: /'
  fi
  rm -f "$stamp"
done
exit $status
