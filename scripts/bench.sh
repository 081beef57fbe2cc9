#!/usr/bin/env bash
# Builds the release preset's benchmarks (bench/*_bench.cc) and runs each one,
# writing Google Benchmark JSON to bench/results/<name>-<date>.json, then
# prints a GB/s table per benchmark.
#
# Usage: scripts/bench.sh [benchmark-name ...]   (default: every bench/*_bench.cc)
# Environment: DARUMA_BENCH_SCAN_BYTES (scan file size, default 1 GiB, kept in
# $TMPDIR between runs), BENCH_JOBS (build parallelism, default 2), extra
# Google Benchmark flags in BENCH_ARGS (e.g. "--benchmark_repetitions=3").
set -euo pipefail
cd "$(dirname "$0")/.."

if [[ $# -gt 0 ]]; then
  names=("$@")
else
  names=()
  for src in bench/*_bench.cc; do names+=("$(basename "${src%.cc}")"); done
fi

cmake --preset release >/dev/null
cmake --build build/release -j "${BENCH_JOBS:-2}" --target "${names[@]}"

mkdir -p bench/results
date_tag=$(date +%Y%m%d)
for name in "${names[@]}"; do
  out="bench/results/${name}-${date_tag}.json"
  echo "== ${name} -> ${out}"
  # shellcheck disable=SC2086
  "build/release/bench/${name}" --benchmark_out="${out}" --benchmark_out_format=json \
    ${BENCH_ARGS:-} >/dev/null
  python3 - "${out}" <<'EOF'
import json, sys
data = json.load(open(sys.argv[1]))
ctx = data.get("context", {})
print("   %s, %d CPUs @ %.0f MHz, libbenchmark %s" % (ctx.get("host_name", "?"), ctx.get("num_cpus", 0),
      ctx.get("mhz_per_cpu", 0), ctx.get("library_build_type", "?")))
print("   %-36s %12s %10s" % ("benchmark", "time/iter", "GB/s"))
for b in data["benchmarks"]:
    if b.get("error_occurred"):
        print("   %-36s %s" % (b["name"], b.get("error_message", "error")))
        continue
    rate = b.get("bytes_per_second", 0) / 1e9
    print("   %-36s %9.3f %-2s %10.2f" % (b["name"], b["real_time"], b["time_unit"], rate))
EOF
done
