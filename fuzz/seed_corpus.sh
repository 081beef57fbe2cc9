#!/usr/bin/env bash
# Fills <dir> (created; normally build/fuzz/seeds) with symbolic links to the
# non-empty `.log` files of the shared fixtures, the seed corpus of the fuzz
# targets. Nothing is copied and nothing is written inside the source tree.
#
# Usage: fuzz/seed_corpus.sh <dir> [fixtures-dir]
set -euo pipefail
dest=${1:?usage: fuzz/seed_corpus.sh <dir> [fixtures-dir]}
fixtures=${2:-$(cd "$(dirname "$0")/../.." && pwd)/shared/fixtures}
mkdir -p "$dest"
if [[ ! -d "$fixtures" ]]; then
  echo "seed_corpus: no fixtures at $fixtures; fuzzing starts from an empty corpus" >&2
  exit 0
fi
count=0
while IFS= read -r -d '' log; do
  rel=${log#"$fixtures"/}
  ln -sf "$log" "$dest/${rel//\//__}"
  count=$((count + 1))
done < <(find "$fixtures" -name '*.log' -type f -size +0 -print0)
echo "seed_corpus: $count .log seeds linked into $dest" >&2
