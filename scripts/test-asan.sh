#!/usr/bin/env bash
# CI's second step: the unit tests under AddressSanitizer + UndefinedBehavior-
# Sanitizer (preset `asan`). Only the unit-test executables are built, which
# keeps the step short on a 2-core machine; the compat and crash suites run in
# the release build (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake --preset asan >/dev/null
targets=()
for layer in common record protocol log recovery coordinator broker tools; do
  if compgen -G "tests/${layer}/*_test.cc" >/dev/null; then targets+=("${layer}_unit_tests"); fi
done
cmake --build --preset asan --target "${targets[@]}"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build/asan --output-on-failure -j2 -L unit "$@"
