#!/usr/bin/env bash
# The README's second command and what CI runs: install what is missing, build
# the release preset (warnings as errors) and run every test with CTest.
# Fixtures are read from ../shared/fixtures when present (tests print SKIPPED
# otherwise).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
python3 scripts/check-layers.py
cmake --preset release >/dev/null
cmake --build --preset release
ctest --test-dir build/release --output-on-failure -j2 "$@"
