// `daruma dump`: kafka-dump-log's output for `.log` files, plus JSON.
//
// Text lines follow kafka-dump-log's wording (spec §12.2) so existing scripts
// keep working; --json prints one JSON object per batch (and per record with
// --deep-iteration). Exit codes: 0 clean, 1 corruption found, 2 usage or I/O.
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
  int64_t max_bytes = INT32_MAX;
};

// Dumps every file to `out` (diagnostics to `err`); returns the exit code.
int RunDump(const DumpOptions& options, std::ostream& out, std::ostream& err);

}  // namespace daruma::tools
