#!/usr/bin/env bash
# Fills <dir> (normally build/fuzz/seeds) with one seed directory per fuzz
# target, <dir>/<target>/, holding symbolic links to the shared fixtures' files
# of the kind that target parses (nothing is copied, nothing is written inside
# the source tree). Identical files are linked once. The request decoder's
# seeds are frames of every message and version of src/protocol/schemas,
# written by the build's request_seed_writer (fuzz/request_seed_writer.cc,
# built with request_decoder_fuzz) from the code generated from the schemas.
#
#   batch_parser_fuzz, dump_fuzz, recovery_fuzz   *.log
#   offset_index_fuzz / time_index_fuzz / txn_index_fuzz
#                                                 *.index / *.timeindex / *.txnindex
#   producer_snapshot_fuzz                        *.snapshot
#   offset_checkpoint_fuzz                        *-offset-checkpoint
#   leader_epoch_checkpoint_fuzz                  leader-epoch-checkpoint
#   partition_metadata_fuzz                       partition.metadata
#   meta_properties_fuzz                          meta.properties
#   request_decoder_fuzz                          generated frames
#
# Usage: fuzz/seed_corpus.sh <dir> [fixtures-dir]
# Environment: FUZZ_BUILD_DIR, the fuzz build holding fuzz/request_seed_writer
# (default: the parent of <dir>, as scripts/fuzz.sh lays it out).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dest=${1:?usage: fuzz/seed_corpus.sh <dir> [fixtures-dir]}
fixtures=${2:-$(cd "$here/../.." && pwd)/shared/fixtures}
mkdir -p "$dest"
build=${FUZZ_BUILD_DIR:-$(cd "$dest/.." && pwd)}

# link_matching <target> <find -name pattern>: links each distinct non-empty
# fixture file matching the pattern into <dest>/<target>/.
link_matching() {
  local target=$1 pattern=$2 dir="$dest/$1" count=0
  rm -rf "$dir"
  mkdir -p "$dir"
  [[ -d "$fixtures" ]] || return 0
  declare -A seen=()
  while IFS= read -r -d '' file; do
    local sum
    sum=$(md5sum <"$file" | cut -c1-32)
    [[ -n ${seen[$sum]:-} ]] && continue
    seen[$sum]=1
    local rel=${file#"$fixtures"/}
    ln -sf "$file" "$dir/${rel//\//__}"
    count=$((count + 1))
  done < <(find "$fixtures" -name "$pattern" -type f -size +0 -print0 | sort -z)
  echo "seed_corpus: $target: $count seeds linked" >&2
}

if [[ ! -d "$fixtures" ]]; then
  echo "seed_corpus: no fixtures at $fixtures; fixture-based targets start empty" >&2
fi
for target in batch_parser_fuzz dump_fuzz recovery_fuzz; do link_matching "$target" '*.log'; done
link_matching offset_index_fuzz '*.index'
link_matching time_index_fuzz '*.timeindex'
link_matching txn_index_fuzz '*.txnindex'
link_matching producer_snapshot_fuzz '*.snapshot'
link_matching offset_checkpoint_fuzz '*-offset-checkpoint'
link_matching leader_epoch_checkpoint_fuzz 'leader-epoch-checkpoint'
link_matching partition_metadata_fuzz 'partition.metadata'
link_matching meta_properties_fuzz 'meta.properties'

rm -rf "$dest/request_decoder_fuzz"
mkdir -p "$dest/request_decoder_fuzz"
if [[ -x "$build/fuzz/request_seed_writer" ]]; then
  "$build/fuzz/request_seed_writer" "$dest/request_decoder_fuzz"
else
  echo "seed_corpus: no $build/fuzz/request_seed_writer (build request_decoder_fuzz);" \
    "request_decoder_fuzz starts from fuzz/corpus/request_decoder only" >&2
fi
