#!/usr/bin/env bash
# Builds the `fuzz` preset (clang, libFuzzer, ASan+UBSan) and runs every fuzz
# target (fuzz/*_fuzz.cc) for the given number of seconds, each seeded with its
# own corpus from fuzz/seed_corpus.sh (fixture files linked, never copied;
# request frames generated from the schemas) and the minimised corpus kept in
# fuzz/corpus/<target without _fuzz> when there is one. New corpus entries go
# to build/fuzz/corpus/<target>,
# findings (crash-*, leak-*, timeout-*, oom-*) to build/fuzz/findings/<target>.
# FUZZ_PARALLEL targets run at a time (default 2, the machine's cores), so the
# wall time is about ceil(targets / FUZZ_PARALLEL) * seconds plus the build.
# Prints executions and findings per target and a total. Exits 3 when a target
# found something, 2 when the targets do not build, 1 when a target failed to
# run without a finding, 0 otherwise.
#
# Usage: scripts/fuzz.sh [seconds-per-target (default 20)] [target ...]
# Environment: FUZZ_BUILD_DIR (default build/fuzz), FUZZ_JOBS (build
# parallelism, default 2), FUZZ_PARALLEL (default 2), FUZZ_MAX_LEN (default
# 65536), FUZZ_ARGS (extra libFuzzer flags).
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-20}
shift || true
build=${FUZZ_BUILD_DIR:-build/fuzz}

if [[ $# -gt 0 ]]; then
  targets=("$@")
else
  targets=()
  for src in fuzz/*_fuzz.cc; do targets+=("$(basename "${src%.cc}")"); done
fi

set -e
start=$SECONDS
if [[ $build == build/fuzz ]]; then
  cmake --preset fuzz >/dev/null
else
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DDARUMA_FUZZ=ON -DDARUMA_BUILD_TESTS=OFF -DDARUMA_BUILD_BENCH=OFF >/dev/null
fi
if ! cmake --build "$build" -j "${FUZZ_JOBS:-2}" --target "${targets[@]}"; then
  echo "== the fuzz targets did not build"
  exit 2
fi
echo "== built ${#targets[@]} targets in $((SECONDS - start))s"
fuzz/seed_corpus.sh "$build/seeds"
set +e

# run_target <target>: fuzzes one target; its summary goes to <build>/<target>.summary.
run_target() {
  local target=$1
  local corpus=$build/corpus/$target findings=$build/findings/$target log=$build/$target.log
  mkdir -p "$corpus" "$findings" "$build/seeds/$target"
  local stamp
  stamp=$(mktemp)
  # The corpus kept in the repository (fuzz/corpus/<target without _fuzz>), read
  # but never written: libFuzzer adds new inputs to the first directory only.
  local kept=()
  [[ -d fuzz/corpus/${target%_fuzz} ]] && kept=("fuzz/corpus/${target%_fuzz}")
  # shellcheck disable=SC2086
  "$build/fuzz/$target" "$corpus" "$build/seeds/$target" "${kept[@]}" -max_total_time="$seconds" \
    -max_len="${FUZZ_MAX_LEN:-65536}" -rss_limit_mb=2048 -timeout=10 \
    -artifact_prefix="$findings/" -print_final_stats=1 ${FUZZ_ARGS:-} >"$log" 2>&1
  local rc=$?
  local execs rate cov found
  execs=$(grep -m1 '^stat::number_of_executed_units' "$log" | awk '{print $2}')
  rate=$(grep -m1 '^stat::average_exec_per_sec' "$log" | awk '{print $2}')
  cov=$(grep -E '^#[0-9]+' "$log" | tail -1 | grep -oE 'cov: [0-9]+' || true)
  found=$(find "$findings" -type f -newer "$stamp" | wc -l)
  {
    printf '%-30s executions: %9s (%6s/s), %-10s corpus: %5d, findings: %d (exit %d)\n' \
      "$target" "${execs:-?}" "${rate:-?}" "${cov:-cov: ?}," "$(ls "$corpus" | wc -l)" \
      "$found" "$rc"
    if [[ $rc -ne 0 || $found -gt 0 ]]; then
      grep -E 'ERROR: |SUMMARY: |runtime error' "$log" | head -5 | sed 's/^/   /'
      find "$findings" -type f -newer "$stamp" | head -5 | sed 's/^/   finding: /'
      echo "   log: $log"
    fi
  } >"$build/$target.summary"
  rm -f "$stamp"
  [[ $rc -eq 0 && $found -eq 0 ]]
}

echo "== fuzzing ${#targets[@]} targets for ${seconds}s each, ${FUZZ_PARALLEL:-2} at a time"
declare -A pids=()
status=0
for target in "${targets[@]}"; do
  while [[ $(jobs -rp | wc -l) -ge ${FUZZ_PARALLEL:-2} ]]; do wait -n; done
  run_target "$target" &
  pids[$target]=$!
done
total_execs=0
total_found=0
for target in "${targets[@]}"; do
  wait "${pids[$target]}" || status=1
  cat "$build/$target.summary"
  n=$(grep -oE 'executions: +[0-9]+' "$build/$target.summary" | grep -oE '[0-9]+$' || echo 0)
  f=$(grep -oE 'findings: [0-9]+' "$build/$target.summary" | grep -oE '[0-9]+$' || echo 0)
  total_execs=$((total_execs + n))
  total_found=$((total_found + f))
done
echo "== total: ${#targets[@]} targets, $total_execs executions, $total_found findings," \
  "$((SECONDS - start))s including the build"
if [[ $total_found -gt 0 ]]; then exit 3; fi
exit $status
