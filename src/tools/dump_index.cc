#include "tools/dump_index.h"

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
