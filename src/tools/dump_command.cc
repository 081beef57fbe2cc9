#include "tools/dump_command.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "tools/dump_checkpoint.h"
#include "tools/dump_context.h"
#include "tools/dump_index.h"
#include "tools/dump_log.h"
#include "tools/dump_snapshot.h"
#include "tools/dump_time_index.h"
#include "tools/dump_txn_index.h"
#include "tools/offsets_message_decoder.h"
#include "tools/transaction_log_decoder.h"

namespace daruma::tools {
namespace {

enum class FileKind {
  kLog,
  kOffsetIndex,
  kTimeIndex,
  kTxnIndex,
  kProducerSnapshot,
  kMetadata,
  kUnknown
};

// Kafka picks the handler by the suffix after the LAST '.' (so
// "x.log.deleted" is unknown); `.checkpoint` is a KRaft snapshot, which holds
// batches. Daruma's metadata-file kinds have no such suffix.
FileKind KindOf(const std::string& name) {
  if (MetadataFileKindOf(name) != MetadataFileKind::kNone) return FileKind::kMetadata;
  auto dot = name.rfind('.');
  if (dot == std::string::npos) return FileKind::kUnknown;
  std::string_view suffix = std::string_view(name).substr(dot);
  if (suffix == ".log" || suffix == ".checkpoint") return FileKind::kLog;
  if (suffix == ".index") return FileKind::kOffsetIndex;
  if (suffix == ".timeindex") return FileKind::kTimeIndex;
  if (suffix == ".txnindex") return FileKind::kTxnIndex;
  if (suffix == ".snapshot") return FileKind::kProducerSnapshot;
  return FileKind::kUnknown;
}

constexpr char kUnknownKindHint[] =
    "not a file dump can read (it reads <offset>.log, .index, .timeindex, .txnindex, "
    ".snapshot, KRaft .checkpoint, *-offset-checkpoint, leader-epoch-checkpoint and "
    "partition.metadata)";

RecordDecoder DecoderFor(const DumpOptions& o) {
  if (o.offsets_decoder) return DecodeOffsetsRecord;
  if (o.transaction_log_decoder) return DecodeTransactionLogRecord;
  return DecodeAsStrings;
}

// A file the "is a directory" hint can name: a segment in `dir` or else in
// its first subdirectory that holds one (a log dir holds partition dirs, not
// segments), else any file dump reads in `dir`; empty if there is none.
std::string ExampleFileIn(const std::string& dir) {
  std::error_code ec;
  auto sorted = [&ec](const std::filesystem::path& d) {
    std::vector<std::filesystem::path> entries;
    for (const auto& e : std::filesystem::directory_iterator(d, ec)) entries.push_back(e.path());
    std::sort(entries.begin(), entries.end());
    return entries;
  };
  auto first_of = [&ec](const std::vector<std::filesystem::path>& entries, bool segment) {
    for (const auto& e : entries) {
      const FileKind kind = KindOf(e.filename().string());
      if (std::filesystem::is_regular_file(e, ec) &&
          (segment ? kind == FileKind::kLog : kind != FileKind::kUnknown)) {
        return e.string();
      }
    }
    return std::string();
  };
  const std::vector<std::filesystem::path> entries = sorted(dir);
  if (std::string found = first_of(entries, true); !found.empty()) return found;
  for (const auto& e : entries) {
    if (!std::filesystem::is_directory(e, ec)) continue;
    if (std::string found = first_of(sorted(e), true); !found.empty()) return found;
  }
  return first_of(entries, false);
}

int DumpOne(const std::string& path, DumpContext& ctx) {
  const std::string name = FileNameOf(path);
  const FileKind kind = KindOf(name);
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (st.type() == std::filesystem::file_type::not_found) {
    ctx.err << "daruma dump: " << path << ": no such file\n";
    return kDumpUsageOrIo;
  }
  if (ec) {
    ctx.err << "daruma dump: " << path << ": " << ec.message() << "\n";
    return kDumpUsageOrIo;
  }
  if (st.type() == std::filesystem::file_type::directory) {
    const std::string example = ExampleFileIn(path);
    ctx.err << "daruma dump: " << path << ": is a directory; pass the files to dump"
            << (example.empty() ? std::string(" (segments, indexes, snapshots, checkpoints)")
                                : ", e.g. " + example)
            << "\n";
    return kDumpUsageOrIo;
  }
  if (kind == FileKind::kUnknown) {
    // Kafka prints "Ignoring unknown file" and exits 0, so a script cannot
    // tell a typo from a clean dump; Daruma says which names it reads.
    ctx.err << "daruma dump: " << path << ": " << kUnknownKindHint << "\n";
    return kDumpUsageOrIo;
  }
  if (!ctx.options.json) ctx.out << "Dumping " << path << "\n";
  switch (kind) {
    case FileKind::kLog:
      return DumpLogFile(path, DecoderFor(ctx.options), ctx);
    case FileKind::kOffsetIndex:
      return DumpOffsetIndexFile(path, ctx);
    case FileKind::kTimeIndex:
      return DumpTimeIndexFile(path, ctx);
    case FileKind::kTxnIndex:
      return DumpTxnIndexFile(path, ctx);
    case FileKind::kProducerSnapshot:
      return DumpProducerSnapshotFile(path, ctx);
    case FileKind::kMetadata:
      return DumpMetadataFile(path, MetadataFileKindOf(name), ctx);
    case FileKind::kUnknown:
      break;
  }
  return kDumpUsageOrIo;
}

}  // namespace

DumpOptions WithImpliedOptions(DumpOptions options) {
  if (options.offsets_decoder || options.transaction_log_decoder) options.print_data_log = true;
  if (options.print_data_log) options.deep_iteration = true;
  return options;
}

int RunDump(const DumpOptions& given, std::ostream& out, std::ostream& err) {
  const DumpOptions options = WithImpliedOptions(given);
  if (options.files.empty()) {
    err << "daruma dump: --files is required\n";
    return kDumpUsageOrIo;
  }
  if (options.offsets_decoder && options.transaction_log_decoder) {
    err << "daruma dump: --offsets-decoder and --transaction-log-decoder are exclusive\n";
    return kDumpUsageOrIo;
  }
  DumpSummary summary;
  DumpContext ctx{options, out, err, summary};
  int rc = kDumpClean;
  for (const auto& path : options.files) rc = std::max(rc, DumpOne(path, ctx));
  summary.Print(err);
  return rc;
}

}  // namespace daruma::tools
