// What every per-kind dumper of `daruma dump` shares: the options, the output
// streams, and the end-of-run summary that kafka-dump-log prints on stderr
// after all files were dumped (spec §12.2).
//
// Summary wording and order are Kafka's (DumpLogSegments.main): offset-index
// mismatches, then time-index errors (timestamp mismatches, out-of-order
// timestamps, indexed offsets not found), then non-consecutive record
// offsets. Kafka keys the lists by absolute path in a hash map; Daruma prints
// files in the order they were dumped. Kafka prepends offset-index mismatches
// and non-consecutive pairs to immutable lists, so those print newest first;
// Daruma keeps that order. Time-index lists are appended, so oldest first.
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "tools/dump_command.h"

namespace daruma::tools {

enum DumpExitCode { kDumpClean = 0, kDumpCorrupt = 1, kDumpUsageOrIo = 2 };

// One (file -> pairs) list of the summary, in first-report order.
class DumpPairList {
 public:
  void Add(const std::string& file, int64_t first, int64_t second);
  bool empty() const { return files_.empty(); }
  const std::vector<std::pair<std::string, std::vector<std::pair<int64_t, int64_t>>>>& files()
      const {
    return files_;
  }

 private:
  std::vector<std::pair<std::string, std::vector<std::pair<int64_t, int64_t>>>> files_;
};

struct DumpSummary {
  DumpPairList index_mismatches;       // (index offset, log offset)
  DumpPairList time_mismatches;        // (index timestamp, log timestamp)
  DumpPairList time_out_of_order;      // (index timestamp, previous indexed timestamp)
  DumpPairList time_offset_not_found;  // (indexed offset, found log offset or -1)
  DumpPairList non_consecutive;        // (offset, next offset)

  bool HasIndexProblems() const;
  // Prints Kafka's stderr lines for everything collected.
  void Print(std::ostream& err) const;
};

struct DumpContext {
  const DumpOptions& options;
  std::ostream& out;
  std::ostream& err;
  DumpSummary& summary;
};

// The absolute form of `path`, as Kafka's File.getAbsolutePath (no symlink
// resolution, no normalisation).
std::string AbsolutePath(const std::string& path);
// The file name part of `path`.
std::string FileNameOf(const std::string& path);
// Kafka's `Optional[Long]` rendering: OptionalLong[v] or OptionalLong.empty.
std::string OptionalLongString(bool present, int64_t value);

}  // namespace daruma::tools
