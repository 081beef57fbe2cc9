#!/usr/bin/env bash
# Soak test (not in CI): `daruma serve` under real producers and consumers
# (kcat) and misbehaving clients (scripts/chaos_client.py) at once, for a
# bounded time, on 127.0.0.1 only.
#
# Usage: scripts/soak.sh [minutes=10] [build-dir=build/release]
#
# Every 10 s it samples the broker's open descriptors, RSS, open connections,
# parked requests and error counters (/metrics), and prints a table; the same
# rows go to bench/results/soak-<UTC time>.csv. At the end: the broker must
# still be serving, every message the producers were acknowledged for must be
# consumable, and SIGTERM must end in a clean shutdown. Exit 0 when all hold.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-10}
build=${2:-build/release}
bin="$build/daruma"
[ -x "$bin" ] || { echo "soak: $bin not built (cmake --build --preset release)" >&2; exit 2; }
command -v kcat >/dev/null || { echo "soak: kcat not installed (scripts/install-deps.sh)" >&2; exit 2; }

work=$(mktemp -d /tmp/daruma-soak.XXXXXX)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
kafka_port=$(free_port)
http_port=$(free_port)
cat >"$work/server.properties" <<EOF
log.dirs=$work/data
listeners=PLAINTEXT://127.0.0.1:$kafka_port
daruma.http.listener=127.0.0.1:$http_port
num.partitions=4
EOF
"$bin" serve --config "$work/server.properties" 2>"$work/daruma.log" &
pid=$!
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  kill "$pid" 2>/dev/null || true
}
trap cleanup EXIT
for _ in $(seq 1 200); do
  python3 - "$http_port" <<'PY' 2>/dev/null && break || true
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=1).read()
PY
  sleep 0.1
done
bootstrap="127.0.0.1:$kafka_port"
# One /metrics read: the values of the families the soak reports, in order.
metrics() { python3 - "$http_port" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
values = dict(l.rsplit(" ", 1) for l in text.splitlines() if l and not l.startswith("#"))
names = ["daruma_connections_active", "daruma_requests_parked",
         "daruma_connection_write_errors_total", "daruma_connection_peer_gone_in_flight_total",
         'daruma_frames_rejected_total{reason="truncated"}', "daruma_accept_errors_total"]
print(" ".join(values.get(n, "NA") for n in names))
PY
}

seconds=$((minutes * 60))
end=$((SECONDS + seconds))
# Producers: batches of 1,000 numbered messages per round; a round counts only
# when kcat exits 0 (every message acknowledged, acks=all).
for p in 1 2 3; do
  (
    round=0
    while [ $SECONDS -lt $end ]; do
      if seq -f "p$p-r$round-%g" 1 1000 | kcat -P -b "$bootstrap" -t soak -X acks=all -q 2>/dev/null; then
        echo "$round" >>"$work/acked-$p"
      else
        echo "$round" >>"$work/failed-$p"
      fi
      round=$((round + 1))
    done
  ) &
  pids+=($!)
done
# Consumers: whole-topic reads, and tails killed at a random moment (the
# consumer that leaves while its fetch is parked or in flight).
(
  while [ $SECONDS -lt $end ]; do
    kcat -C -b "$bootstrap" -t soak -e -o beginning -q >/dev/null 2>&1 || true
  done
) &
pids+=($!)
(
  while [ $SECONDS -lt $end ]; do
    timeout -s KILL "0.$((RANDOM % 9 + 1))" kcat -C -b "$bootstrap" -t soak -o end -q >/dev/null 2>&1 || true
  done
) 2>/dev/null &
pids+=($!)
python3 scripts/chaos_client.py --port "$kafka_port" --topic soak --seconds "$seconds" >"$work/chaos.json" &
chaos=$!

mkdir -p bench/results
csv="bench/results/soak-$(date -u +%Y%m%dT%H%M%SZ).csv"
echo "elapsed_s,fds,rss_mib,connections,parked,write_errors,peer_gone_in_flight,frames_rejected_truncated,accept_errors" >"$csv"
printf '%9s %6s %8s %6s %7s %8s %9s %10s\n' elapsed fds rss_MiB conns parked wr_errs peer_gone truncated
start=$SECONDS
while [ $SECONDS -lt $end ]; do
  sleep $((10 - (SECONDS - start) % 10))
  kill -0 "$pid" 2>/dev/null || { echo "soak: the broker died" >&2; tail -20 "$work/daruma.log" >&2; exit 1; }
  fds=$(ls /proc/$pid/fd | wc -l)
  rss=$(awk '/VmRSS/ {printf "%.1f", $2/1024}' /proc/$pid/status)
  read -r conns parked werr gone trunc aerr < <(metrics)
  el=$((SECONDS - start))
  echo "$el,$fds,$rss,$conns,$parked,$werr,$gone,$trunc,$aerr" >>"$csv"
  printf '%9s %6s %8s %6s %7s %8s %9s %10s\n' "$el" "$fds" "$rss" "$conns" "$parked" "$werr" "$gone" "$trunc"
done
wait "$chaos" || { echo "soak: the chaos client saw the broker refuse connections" >&2; exit 1; }
for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
pids=()

acked=0
for p in 1 2 3; do
  [ -f "$work/acked-$p" ] && acked=$((acked + $(wc -l <"$work/acked-$p") * 1000))
done
failed=$(cat "$work"/failed-* 2>/dev/null | wc -l || true)
kcat -C -b "$bootstrap" -t soak -e -o beginning -q >"$work/all.txt" 2>/dev/null || echo "soak: the final read failed" >&2
# Every message of every acknowledged round must be there (one pass).
missing=$(python3 - "$work" <<'PY'
import collections, os, sys
work = sys.argv[1]
seen = collections.Counter()
with open(os.path.join(work, "all.txt"), errors="replace") as f:
    for line in f:
        seen[line.rsplit("-", 1)[0]] += 1
missing = 0
for p in (1, 2, 3):
    path = os.path.join(work, f"acked-{p}")
    if not os.path.exists(path):
        continue
    for r in open(path).read().split():
        missing += max(0, 1000 - seen[f"p{p}-r{r}"])
print(missing)
PY
)
echo "chaos: $(cat "$work/chaos.json")"
echo "acknowledged messages: $acked (failed producer rounds: $failed); missing after the soak: $missing"
python3 -c "import urllib.request,sys; print(urllib.request.urlopen('http://127.0.0.1:$http_port/health', timeout=5).read().decode().strip())" || echo "soak: /health did not answer" >&2
kill -TERM "$pid"
rc=0
wait "$pid" || rc=$?
trap - EXIT
grep -q "clean shutdown complete" "$work/daruma.log" || { echo "soak: no clean shutdown (exit $rc)" >&2; rc=1; }
echo "samples: $csv; broker log: $work/daruma.log; exit $rc"
[ "$missing" -eq 0 ] && [ "$rc" -eq 0 ]
