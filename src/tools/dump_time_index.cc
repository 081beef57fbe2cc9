#include "tools/dump_time_index.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include "log/log_file_names.h"
#include "log/offset_index.h"
#include "log/time_index.h"
#include "tools/dump_index.h"
#include "tools/dump_segment_probe.h"

namespace daruma::tools {
namespace {

void PrintJson(DumpContext& ctx, const nlohmann::ordered_json& j) {
  ctx.out << j.dump() << "\n";
}

class TimeIndexVerifier {
 public:
  TimeIndexVerifier(const std::string& path, const File& log, const OffsetIndex* offsets,
                    DumpContext& ctx)
      : path_(path), abs_path_(AbsolutePath(path)), log_(log), offsets_(offsets), ctx_(ctx) {}

  // Checks one entry; returns false on an I/O error (already reported).
  bool Check(const TimestampOffset& e, int64_t previous_timestamp) {
    const int32_t position = offsets_ ? offsets_->Lookup(e.offset).position : 0;
    auto found = FindBatchFrom(log_, uint64_t(std::max(position, 0)), e.offset);
    if (!found.ok()) {
      ctx_.err << "daruma dump: " << found.status().ToString() << "\n";
      return false;
    }
    if (!found->has_value() || (*found)->last_offset != e.offset) {
      const int64_t log_offset = found->has_value() ? (*found)->last_offset : -1;
      // Some Kafka versions (3.1 among them, on real brokers' data) index the
      // offset of the record holding the batch's largest timestamp, which can
      // lie inside the batch: kafka-dump-log's line is kept, but that is
      // Kafka's own layout, not damage, and does not fail the run.
      const bool inside_batch = found->has_value() && (*found)->base_offset <= e.offset &&
                                (*found)->max_record_timestamp == e.timestamp;
      Report(ctx_.summary.time_offset_not_found, "timeIndexOffsetNotFound", "indexOffset", e.offset,
             "logOffset", log_offset, /*damage=*/!inside_batch);
      return true;
    }
    if ((*found)->max_record_timestamp != e.timestamp) {
      Report(ctx_.summary.time_mismatches, "timeIndexTimestampMismatch", "indexTimestamp",
             e.timestamp, "logTimestamp", (*found)->max_record_timestamp);
    }
    if (previous_timestamp >= e.timestamp) {
      Report(ctx_.summary.time_out_of_order, "timeIndexOutOfOrder", "indexTimestamp", e.timestamp,
             "previousIndexTimestamp", previous_timestamp);
    }
    return true;
  }

  bool found_problems() const { return found_problems_; }

 private:
  // `damage` false: printed as kafka-dump-log prints it, but a layout Kafka
  // itself writes, so the run still succeeds.
  void Report(DumpPairList& list, const char* type, const char* first_name, int64_t first,
              const char* second_name, int64_t second, bool damage = true) {
    found_problems_ = found_problems_ || damage;
    list.Add(abs_path_, first, second);
    if (ctx_.options.json) {
      PrintJson(ctx_,
                {{"type", type}, {"file", path_}, {first_name, first}, {second_name, second}});
    }
  }

  const std::string& path_;
  std::string abs_path_;
  const File& log_;
  const OffsetIndex* offsets_;
  DumpContext& ctx_;
  bool found_problems_ = false;
};

void PrintEntry(const std::string& path, const TimestampOffset& e, DumpContext& ctx) {
  if (ctx.options.json) {
    PrintJson(ctx, {{"type", "timeIndexEntry"},
                    {"file", path},
                    {"timestamp", e.timestamp},
                    {"offset", e.offset}});
  } else {
    ctx.out << "timestamp: " << e.timestamp << " offset: " << e.offset << "\n";
  }
}

// Why entry `slot` cannot be part of a time index Kafka wrote, or "": offsets
// not below the base, timestamps never negative (Kafka appends an entry only
// for a timestamp above the last, starting from -1). Entries out of order
// are left to Kafka's own summaries ("Found out of order timestamp").
std::string TimeEntryProblem(const TimestampOffset& e, size_t slot, int64_t base_offset) {
  std::string why;
  if (e.offset < base_offset) {
    why = fmt::format("relative offset {} is negative", e.offset - base_offset);
  } else if (e.timestamp < 0) {
    why = fmt::format("timestamp {} is negative", e.timestamp);
  }
  if (why.empty()) return "";
  return fmt::format("at byte {}: entry {} (timestamp {}, offset {}): {}",
                     slot * TimeIndex::kEntrySize, slot, e.timestamp, e.offset, why);
}

}  // namespace

int DumpTimeIndexFile(const std::string& path, DumpContext& ctx) {
  FileSystem* fs = FileSystem::Default();
  auto base = OffsetFromFileName(FileNameOf(path));
  if (!base.ok()) {
    ctx.err << "daruma dump: " << base.status().ToString() << "\n";
    return kDumpUsageOrIo;
  }
  auto index = TimeIndex::Open(path, *base, 10 * 1024 * 1024, fs, /*writable=*/false);
  if (!index.ok()) {
    ctx.err << "daruma dump: " << index.status().ToString() << "\n";
    return kDumpUsageOrIo;
  }
  const TimeIndex& idx = **index;
  if (!ctx.options.index_sanity_check) {
    const std::string bad_size = IndexSizeProblem(idx.length(), TimeIndex::kEntrySize);
    if (!bad_size.empty()) {
      ReportInvalidIndex(path, bad_size, "time index", ctx);
      return kDumpCorrupt;
    }
  }
  if (ctx.options.index_sanity_check) {
    Status sane = idx.SanityCheck();
    if (!sane.ok()) {
      ctx.err << sane.message() << "\n";
      return kDumpCorrupt;
    }
    if (ctx.options.json) {
      PrintJson(ctx, {{"type", "indexState"}, {"file", path}, {"state", "passed sanity check"}});
    } else {
      ctx.out << path << " passed sanity check.\n";
    }
    return kDumpClean;
  }
  const std::string log_path = SegmentLogPathFor(path);
  auto log = fs->Open(log_path, OpenMode::kRead);
  if (!log.ok()) {
    ctx.err << "daruma dump: " << log.status().ToString()
            << " (time index entries are printed unverified)\n";
  }
  std::string offset_index_path = log_path.substr(0, log_path.size() - 4) + ".index";
  auto offsets = OffsetIndex::Open(offset_index_path, *base, 10 * 1024 * 1024, fs, false);
  std::optional<TimeIndexVerifier> verifier;
  if (log.ok()) verifier.emplace(path, **log, offsets.ok() ? offsets->get() : nullptr, ctx);

  int64_t previous_timestamp = -1;
  for (size_t i = 0; i < idx.entries(); ++i) {
    const TimestampOffset e = idx.Entry(i);
    if (e.offset == idx.base_offset() && i > 0) break;
    const std::string invalid = TimeEntryProblem(e, i, idx.base_offset());
    if (!invalid.empty()) {
      ReportInvalidIndex(path, invalid, "time index", ctx);
      return log.ok() ? kDumpCorrupt : kDumpUsageOrIo;  // a missing .log (2) still wins
    }
    if (verifier && !verifier->Check(e, previous_timestamp)) return kDumpUsageOrIo;
    if (!ctx.options.verify_index_only) PrintEntry(path, e, ctx);
    previous_timestamp = e.timestamp;
  }
  if (!log.ok()) return kDumpUsageOrIo;
  return verifier->found_problems() ? kDumpCorrupt : kDumpClean;
}

}  // namespace daruma::tools
