#!/usr/bin/env bash
# Long fuzz campaign for one target (issue 22: each file-reading target run once
# for >= 10 M executions). Runs the already built binary build/fuzz/fuzz/<target>
# (scripts/fuzz.sh or `cmake --build build/fuzz --target <target>` builds it;
# fuzz/seed_corpus.sh build/fuzz/seeds links its seeds) under `nice -n 19` until
# the executions of all its segments add up to the goal. A segment ends when
# libFuzzer reaches its -runs or stops at a finding; after a finding (the
# artifact stays in build/fuzz/campaign-findings/<target>/) the next segment
# starts from the same working corpus with the executions still missing, at most
# FUZZ_MAX_SEGMENTS segments. Logs: build/fuzz/campaign/logs/<target>.<mode>.<n>.log;
# a summary line per segment is appended to build/fuzz/campaign/logs/<target>.segments.
#
# Inputs (read-only): build/fuzz/seeds/<target> and fuzz/corpus/<target without
# _fuzz> when it exists. New corpus entries go to build/fuzz/campaign/<target>.
#
# A campaign outlives one machine: every finished segment is also appended to
# the committed ledger fuzz/campaign-ledger.txt (date, target, executions,
# findings, the commit checked out), and the executions already done are the
# sum of the target's ledger rows. To carry a campaign to another machine,
# merge its working corpus into fuzz/corpus/<name> (libFuzzer -merge=1) and
# commit that with the ledger; the next run there continues from both. To end
# a campaign early and still count it: `touch build/fuzz/campaign/STOP`, then
# `pkill -INT -f build/fuzz/fuzz/<target>` (libFuzzer prints its final stats on
# SIGINT; the segment is recorded and no new one starts while STOP exists).
#
# Usage: scripts/fuzz-campaign.sh <target> [goal-executions (default 10000000)] [mode]
#   mode `trial`: one segment of FUZZ_TRIAL_SECONDS (default 30) instead.
#   FUZZ_PROCS=2 runs two processes sharing the working corpus (each with half
#   the missing executions; libFuzzer reloads the shared directory).
# Environment: FUZZ_BIN_DIR (default build/fuzz/fuzz), FUZZ_MAX_SEGMENTS (10),
#   FUZZ_TIMEOUT (per-input seconds, default 120: libFuzzer counts wall-clock
#   time, and at nice 19 beside a build or a test run an input that takes
#   10 ms waited over 10 s for a core and was reported as a timeout),
#   FUZZ_MAX_LEN (65536), FUZZ_PROCS (1), FUZZ_ARGS (extra libFuzzer flags,
#   word-split). For long campaigns `FUZZ_ARGS=-entropic=0` with
#   `ASAN_OPTIONS=malloc_context_size=0` runs recovery_fuzz ~1.6x faster: with a
#   corpus of ~600 inputs and ~34,000 features, libFuzzer's entropic
#   bookkeeping (InputCorpus::UpdateFeatureFrequency) took 44 % of the time and
#   ASan's allocation stack traces another 6 % (perf, 2026-12-04).
set -uo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: scripts/fuzz-campaign.sh <target> [goal] [trial]}
goal=${2:-10000000}
mode=${3:-main}
bin=${FUZZ_BIN_DIR:-build/fuzz/fuzz}/$target
corpus=build/fuzz/campaign/$target
findings=build/fuzz/campaign-findings/$target
logs=build/fuzz/campaign/logs
mkdir -p "$corpus" "$findings" "$logs" "build/fuzz/seeds/$target"
kept=()
[[ -d fuzz/corpus/${target%_fuzz} ]] && kept=("fuzz/corpus/${target%_fuzz}")

# execs_of <log>: executions of one libFuzzer process (final stats, else the
# last status line).
execs_of() {
  local n
  n=$(grep -m1 '^stat::number_of_executed_units' "$1" | awk '{print $2}')
  [[ -z $n ]] && n=$(grep -oE '^#[0-9]+' "$1" | tail -1 | tr -d '#')
  echo "${n:-0}"
}

# run_proc <log> <runs-or-empty> <seconds-or-empty>
run_proc() {
  local log=$1 runs=$2 secs=$3 limit=()
  [[ -n $runs ]] && limit+=("-runs=$runs")
  [[ -n $secs ]] && limit+=("-max_total_time=$secs")
  # shellcheck disable=SC2086
  nice -n 19 "$bin" "$corpus" "build/fuzz/seeds/$target" "${kept[@]}" "${limit[@]}" \
    -max_len="${FUZZ_MAX_LEN:-65536}" -rss_limit_mb=2048 -timeout="${FUZZ_TIMEOUT:-120}" -print_final_stats=1 \
    -artifact_prefix="$findings/" ${FUZZ_ARGS:-} >"$log" 2>&1
}

ledger=fuzz/campaign-ledger.txt
stop=build/fuzz/campaign/STOP
done_execs=0
if [[ $mode == main && -f $ledger ]]; then
  done_execs=$(awk -v t="$target" '$1 !~ /^#/ && $2 == t {s += $3} END {print s + 0}' "$ledger")
fi
seg=$(ls "$logs" | grep -c "^$target\.$mode\." || true)
procs=${FUZZ_PROCS:-1}
while :; do
  if [[ -e $stop ]]; then
    echo "$target: $stop exists (an earlier campaign was ended early); remove it to run"
    break
  fi
  seg=$((seg + 1))
  start=$SECONDS
  before=$(ls "$findings" | wc -l)
  pids=() seglogs=()
  if [[ $mode == trial ]]; then
    seglogs=("$logs/$target.trial.$seg.log")
    run_proc "${seglogs[0]}" "" "${FUZZ_TRIAL_SECONDS:-30}"
  else
    missing=$((goal - done_execs))
    ((missing <= 0)) && break
    per=$(((missing + procs - 1) / procs))
    for p in $(seq 1 "$procs"); do
      seglogs+=("$logs/$target.main.$seg.p$p.log")
      run_proc "${seglogs[-1]}" "$per" "" &
      pids+=($!)
      sleep 2
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
  fi
  wall=$((SECONDS - start))
  execs=0 rates=() rcs=()
  for l in "${seglogs[@]}"; do
    execs=$((execs + $(execs_of "$l")))
    rates+=("$(grep -m1 '^stat::average_exec_per_sec' "$l" | awk '{print $2}')")
  done
  cov=$(grep -hE '^#[0-9]+' "${seglogs[@]}" | grep -oE 'cov: [0-9]+' | awk '{print $2}' | sort -n | tail -1)
  new=$(($(ls "$findings" | wc -l) - before))
  printf '%s %s %d %d wall=%ds rate=%s cov=%s corpus=%d new_findings=%d logs=%s\n' \
    "$target" "$mode" "$seg" "$execs" "$wall" "$(IFS=+; echo "${rates[*]}")" "${cov:-?}" \
    "$(ls "$corpus" | wc -l)" "$new" "$(IFS=,; echo "${seglogs[*]}")" | tee -a "$logs/$target.segments"
  [[ $mode == trial ]] && break
  printf '%s %s %d %d %s segment=%d rate=%s\n' "$(date -u +%F)" "$target" "$execs" "$new" \
    "$(git rev-parse --short HEAD)" "$seg" "$(IFS=+; echo "${rates[*]}")" >>"$ledger"
  done_execs=$((done_execs + execs))
  [[ -e $stop ]] && break
  ((done_execs >= goal)) && break
  if ((seg >= ${FUZZ_MAX_SEGMENTS:-10})); then
    echo "$target: stopped after $seg segments at $done_execs executions" | tee -a "$logs/$target.segments"
    break
  fi
  if ((new == 0 && execs == 0)); then
    echo "$target: segment made no progress; stopping" | tee -a "$logs/$target.segments"
    break
  fi
done
echo "$target: $mode total executions $done_execs (goal $goal)"
