#!/usr/bin/env bash
# The README's first command: install what is missing, build, and run the main
# job on the default embedded setup (for now: `daruma dump` on a sample
# partition the build generates).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release --target daruma sample
exec build/release/daruma dump --deep-iteration --print-data-log \
  --files build/release/sample/sample-0/00000000000000000000.log
