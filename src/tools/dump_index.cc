#include "tools/dump_index.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <ostream>

#include "log/log_file_names.h"
#include "log/offset_index.h"
#include "tools/dump_segment_probe.h"

namespace daruma::tools {

std::string SegmentLogPathFor(const std::string& index_path) {
  const std::string name = FileNameOf(index_path);
  const std::string dir = index_path.substr(0, index_path.size() - name.size());
  return dir + name.substr(0, name.find('.')) + ".log";
}

namespace {

void PrintEntry(const std::string& path, const OffsetPosition& e, DumpContext& ctx) {
  if (ctx.options.json) {
    ctx.out << nlohmann::ordered_json{{"type", "offsetIndexEntry"},
                                      {"file", path},
                                      {"offset", e.offset},
                                      {"position", e.position}}
                   .dump()
            << "\n";
  } else {
    ctx.out << "offset: " << e.offset << " position: " << e.position << "\n";
  }
}

void ReportMismatch(const std::string& path, int64_t index_offset, int64_t log_offset,
                    DumpContext& ctx) {
  ctx.summary.index_mismatches.Add(AbsolutePath(path), index_offset, log_offset);
  if (ctx.options.json) {
    ctx.out << nlohmann::ordered_json{{"type", "offsetIndexMismatch"},
                                      {"file", path},
                                      {"indexOffset", index_offset},
                                      {"logOffset", log_offset}}
                   .dump()
            << "\n";
  }
}

// "<path> is empty." / "<path> passed sanity check." and their JSON forms.
void PrintFileState(const std::string& path, const char* state, DumpContext& ctx) {
  if (ctx.options.json) {
    ctx.out
        << nlohmann::ordered_json{{"type", "indexState"}, {"file", path}, {"state", state}}.dump()
        << "\n";
  } else {
    ctx.out << path << " " << state << ".\n";
  }
}

}  // namespace

std::string IndexSizeProblem(uint64_t length, size_t entry_size) {
  const uint64_t tail = length % entry_size;
  if (tail == 0) return "";
  return fmt::format("at byte {}: the size, {} bytes, is not a multiple of the {}-byte entry",
                     length - tail, length, entry_size);
}

void ReportInvalidIndex(const std::string& path, const std::string& problem, const char* kind,
                        DumpContext& ctx) {
  ctx.err << "daruma dump: " << path << " " << problem << "; not a valid " << kind
          << ", stopped here\n";
}

namespace {

// Why entry `slot` cannot be part of an offset index Kafka wrote, or "":
// offsets above the base and increasing, positions from 0 and increasing.
std::string OffsetEntryProblem(const OffsetPosition& e, const OffsetPosition* previous, size_t slot,
                               int64_t base_offset) {
  std::string why;
  if (e.offset < base_offset) {
    why = fmt::format("relative offset {} is negative", e.offset - base_offset);
  } else if (e.position < 0) {
    why = fmt::format("position {} is negative", e.position);
  } else if (previous != nullptr && e.offset <= previous->offset) {
    why = fmt::format("offset {} does not follow the previous entry's {}", e.offset,
                      previous->offset);
  } else if (previous != nullptr && e.position <= previous->position) {
    why = fmt::format("position {} does not follow the previous entry's {}", e.position,
                      previous->position);
  }
  if (why.empty()) return "";
  return fmt::format("at byte {}: entry {} (offset {}, position {}): {}",
                     slot * OffsetIndex::kEntrySize, slot, e.offset, e.position, why);
}

}  // namespace

int DumpOffsetIndexFile(const std::string& path, DumpContext& ctx) {
  FileSystem* fs = FileSystem::Default();
  auto base = OffsetFromFileName(FileNameOf(path));
  if (!base.ok()) {
    ctx.err << "daruma dump: " << base.status().ToString() << "\n";
    return kDumpUsageOrIo;
  }
  auto index = OffsetIndex::Open(path, *base, 10 * 1024 * 1024, fs, /*writable=*/false);
  if (!index.ok()) {
    ctx.err << "daruma dump: " << index.status().ToString() << "\n";
    return kDumpUsageOrIo;
  }
  const OffsetIndex& idx = **index;
  if (!ctx.options.index_sanity_check) {
    const std::string bad_size = IndexSizeProblem(idx.length(), OffsetIndex::kEntrySize);
    if (!bad_size.empty()) {
      ReportInvalidIndex(path, bad_size, "offset index", ctx);
      return kDumpCorrupt;
    }
  }
  if (idx.entries() == 0) {
    PrintFileState(path, "is empty", ctx);
    return kDumpClean;
  }
  if (ctx.options.index_sanity_check) {
    Status sane = idx.SanityCheck();
    if (!sane.ok()) {
      ctx.err << sane.message() << "\n";
      return kDumpCorrupt;
    }
    PrintFileState(path, "passed sanity check", ctx);
    return kDumpClean;
  }
  const std::string log_path = SegmentLogPathFor(path);
  auto log = fs->Open(log_path, OpenMode::kRead);
  if (!log.ok()) {
    ctx.err << "daruma dump: " << log.status().ToString()
            << " (index entries are printed unverified)\n";
  }
  int rc = log.ok() ? kDumpClean : kDumpUsageOrIo;
  for (size_t i = 0; i < idx.entries(); ++i) {
    const OffsetPosition e = idx.Entry(i);
    // A crash leaves zeroed preallocated slots; Kafka stops at the first one.
    if (e.offset == idx.base_offset() && i > 0) break;
    const OffsetPosition previous = i > 0 ? idx.Entry(i - 1) : OffsetPosition{};
    const std::string invalid =
        OffsetEntryProblem(e, i > 0 ? &previous : nullptr, i, idx.base_offset());
    if (!invalid.empty()) {
      ReportInvalidIndex(path, invalid, "offset index", ctx);
      return std::max(rc, int(kDumpCorrupt));  // a missing .log (2) still wins
    }
    if (log.ok()) {
      auto found = FirstBatchLastOffsetAt(**log, uint64_t(std::max(e.position, 0)),
                                          ctx.options.max_message_size);
      if (!found.ok()) {
        ctx.err << "daruma dump: " << found.status().ToString() << "\n";
        return kDumpUsageOrIo;
      }
      const int64_t log_offset = found->value_or(-1);
      if (log_offset != e.offset) {
        ReportMismatch(path, e.offset, log_offset, ctx);
        rc = std::max(rc, int(kDumpCorrupt));
      }
    }
    if (!ctx.options.verify_index_only) PrintEntry(path, e, ctx);
  }
  return rc;
}

}  // namespace daruma::tools
