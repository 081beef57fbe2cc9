// `daruma dump`: kafka-dump-log (DumpLogSegments) parity for every file kind
// of a Kafka log directory, plus JSON.
//
// The handler is chosen by the file name, as kafka-dump-log does by suffix
// (spec §12.1): `.log` (and KRaft `.checkpoint` snapshots) -> batches and
// records; `.index`, `.timeindex` -> entries, verified against the `.log`
// beside them; `.txnindex`, `.snapshot` -> entries. Daruma also dumps what
// kafka-dump-log ignores: the offset checkpoints (`*-offset-checkpoint`),
// `leader-epoch-checkpoint` and `partition.metadata`. Anything else (or a
// directory) is an error naming the file and the kinds dump reads, exit 2
// (Kafka prints "Ignoring unknown file" and exits 0, which a script cannot
// tell from a clean dump).
//
// Text lines follow kafka-dump-log's wording (spec §12.2) so existing scripts
// keep working, including the end-of-run summaries on stderr ("Mismatches in
// :<path>", "Non-consecutive offsets in <path>", ...). With --json every
// printed item is one JSON object per line on stdout instead (the stderr
// summaries stay). Nothing is ever written to the dumped files.
//
// Index files whose bytes cannot be an index (a size that is not a multiple
// of the entry size, offsets below the base offset, offset-index offsets or
// positions that go backwards, negative positions or timestamps) are an error naming the file and
// the byte position; printing stops there instead of listing garbage entries.
//
// Exit codes (the rule of every subcommand, tools/cli.h): 0 every file read
// and valid, 1 a corrupt or invalid file or a mismatch found, 2 usage, a
// missing, unreadable or unknown kind of file.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace daruma::tools {

struct DumpOptions {
  std::vector<std::string> files;
  bool deep_iteration = false;
  bool print_data_log = false;
  bool skip_record_metadata = false;
  bool json = false;
  // Index files: print only mismatches / only run the §7.5 sanity checks.
  bool verify_index_only = false;
  bool index_sanity_check = false;
  // Decode record keys and values of `__consumer_offsets` / `__transaction_state`.
  // Either implies print_data_log (and so deep iteration), as in Kafka.
  bool offsets_decoder = false;
  bool transaction_log_decoder = false;
  int64_t max_bytes = INT32_MAX;
  // Read window when verifying an `.index` entry against its batch.
  int32_t max_message_size = 5 * 1024 * 1024;
};

// Kafka's implications: a decoder implies print_data_log, which implies
// deep_iteration. RunDump applies them itself.
DumpOptions WithImpliedOptions(DumpOptions options);

// Dumps every file to `out` (diagnostics to `err`); returns the exit code.
int RunDump(const DumpOptions& options, std::ostream& out, std::ostream& err);

}  // namespace daruma::tools
