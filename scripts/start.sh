#!/usr/bin/env bash
# The README's first command: install what is missing (Debian packages only),
# build the release preset, and start the broker on the default config
# (config/server.properties: log.dirs=./data, Kafka on 127.0.0.1:9092, health
# and metrics on 127.0.0.1:9644). Ctrl-C (SIGINT) or SIGTERM shuts it down
# cleanly. Extra arguments go to `daruma serve` (e.g. --set num.partitions=3).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target daruma
cat <<'MSG'
daruma: starting the broker (Ctrl-C stops it cleanly). From another terminal:
  curl -s 127.0.0.1:9644/health
  seq 1 5 | kcat -P -b 127.0.0.1:9092 -t demo
  kcat -C -b 127.0.0.1:9092 -t demo -e -o beginning
  build/release/daruma dump --files data/demo-0/00000000000000000000.log --print-data-log
MSG
exec build/release/daruma serve --config config/server.properties "$@"
