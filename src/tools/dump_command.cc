#include "tools/dump_command.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include "common/file_system.h"
#include "record/control_record.h"
#include "record/file_batch_reader.h"
#include "record/legacy_message.h"

namespace daruma::tools {
namespace {

enum ExitCode { kClean = 0, kCorrupt = 1, kUsageOrIo = 2 };

std::string OptionalLong(const std::optional<int64_t>& v) {
  return v ? fmt::format("OptionalLong[{}]", *v) : "OptionalLong.empty";
}

std::string HeaderKeys(const Record& r) {
  std::string out = "[";
  for (size_t i = 0; i < r.headers.size(); ++i) {
    if (i) out += ",";
    out += r.headers[i].key;
  }
  return out + "]";
}

int32_t SizeOf(const std::optional<std::string>& s) {
  return s ? int32_t(s->size()) : -1;
}

// Describes a control record as kafka-dump-log does.
std::string ControlSuffix(const Record& r) {
  if (!r.key) return "";
  auto type = ParseControlRecordKey(AsBytes(*r.key));
  if (!type.ok()) return " unknownControlRecord";
  if (*type == ControlRecordType::kAbort || *type == ControlRecordType::kCommit) {
    auto epoch = r.value ? ParseEndTxnMarkerCoordinatorEpoch(AsBytes(*r.value))
                         : Result<int32_t>(Status::InvalidRecord("null marker value"));
    return fmt::format(" endTxnMarker: {} coordinatorEpoch: {}", ControlRecordTypeName(*type),
                       epoch.ok() ? *epoch : -1);
  }
  // Other types as kafka-dump-log prints them: name and the raw type id.
  const int16_t id = int16_t(LoadBe16(AsBytes(*r.key).data() + 2));
  return fmt::format(" controlType: {}({})", ControlRecordTypeName(*type), id);
}

// Per-message CRC facts of a legacy record, printed by deep iteration.
struct LegacyCrc {
  bool valid = false;
  uint32_t crc = 0;
};

class Dumper {
 public:
  Dumper(const DumpOptions& o, std::ostream& out, std::ostream& err)
      : o_(o), out_(out), err_(err) {}

  int DumpFile(const std::string& path) {
    auto file = FileSystem::Default()->Open(path, OpenMode::kRead);
    if (!file.ok()) {
      err_ << "daruma dump: " << file.status().ToString() << "\n";
      return kUsageOrIo;
    }
    if (!o_.json) {
      out_ << "Dumping " << path << "\n";
      std::string name = BaseName(path);
      out_ << "Log starting offset: " << StartingOffset(name) << "\n";
    }
    FileBatchReaderOptions ro;
    ro.end_position = uint64_t(o_.max_bytes);
    FileBatchReader reader(file->get(), ro);
    int rc = kClean;
    while (auto entry = reader.Next()) {
      if (!DumpEntry(*entry)) rc = kCorrupt;
    }
    if (reader.stop_reason() == StopReason::kIoError) {
      err_ << "daruma dump: " << reader.stop_message() << "\n";
      return kUsageOrIo;
    }
    const bool read_whole_file = o_.max_bytes >= int64_t(reader.end());
    if (reader.stop_reason() != StopReason::kEndOfFile && read_whole_file) {
      uint64_t invalid = reader.end() - reader.position();
      if (o_.json) {
        out_ << nlohmann::json{{"type", "invalidBytes"},
                               {"file", path},
                               {"position", reader.position()},
                               {"bytes", invalid},
                               {"reason", StopReasonName(reader.stop_reason())},
                               {"message", reader.stop_message()}}
                    .dump()
             << "\n";
      } else {
        out_ << "Found " << invalid << " invalid bytes at the end of " << BaseName(path) << "\n";
      }
      err_ << reader.stop_message() << "\n";
      rc = kCorrupt;
    }
    ReportNonConsecutive(path);
    return rc;
  }

 private:
  static std::string StartingOffset(const std::string& name) {
    auto dot = name.find('.');
    std::string prefix = name.substr(0, dot);
    try {
      return std::to_string(std::stoll(prefix));
    } catch (...) {
      return "0";
    }
  }

  // Returns false when the entry is invalid.
  bool DumpEntry(const LogEntry& e) {
    Status valid = e.Validate();
    if (e.is_v2() && e.has_batch_header()) {
      DumpV2(e, valid.ok());
    } else {
      DumpLegacy(e, valid.ok());
    }
    if (!valid.ok()) err_ << valid.message() << "\n";
    return valid.ok();
  }

  void DumpV2(const LogEntry& e, bool valid) {
    RecordBatchView b = e.batch();
    if (o_.json) {
      nlohmann::json j = {
          {"type", "batch"},
          {"baseOffset", b.base_offset()},
          {"lastOffset", b.last_offset()},
          {"count", b.records_count()},
          {"baseSequence", b.base_sequence()},
          {"lastSequence", b.last_sequence()},
          {"producerId", b.producer_id()},
          {"producerEpoch", b.producer_epoch()},
          {"partitionLeaderEpoch", b.partition_leader_epoch()},
          {"isTransactional", b.is_transactional()},
          {"isControl", b.is_control()},
          {"deleteHorizonMs",
           b.delete_horizon_ms() ? nlohmann::json(*b.delete_horizon_ms()) : nlohmann::json()},
          {"position", e.position},
          {"timestampType", TimestampTypeName(b.timestamp_type())},
          {"baseTimestamp", b.base_timestamp()},
          {"maxTimestamp", b.max_timestamp()},
          {"size", e.size()},
          {"magic", int(b.magic())},
          {"compression", std::string(CompressionName(b.compression()))},
          {"attributes", b.attributes()},
          {"lastOffsetDelta", b.last_offset_delta()},
          {"crc", b.stored_crc()},
          {"crcValid", valid}};
      out_ << j.dump() << "\n";
    } else {
      out_ << fmt::format(
          "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} "
          "producerId: {} producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} "
          "isControl: {} deleteHorizonMs: {} position: {} {}: {} size: {} magic: {} "
          "compresscodec: {} crc: {} isvalid: {}\n",
          b.base_offset(), b.last_offset(), b.records_count(), b.base_sequence(), b.last_sequence(),
          b.producer_id(), b.producer_epoch(), b.partition_leader_epoch(), b.is_transactional(),
          b.is_control(), OptionalLong(b.delete_horizon_ms()), e.position,
          TimestampTypeName(b.timestamp_type()), b.max_timestamp(), e.size(), b.magic(),
          CompressionName(b.compression()), b.stored_crc(), valid);
    }
    if (!o_.deep_iteration) return;
    auto records = b.DecodeRecords();
    if (!records.ok()) {
      err_ << "position " << e.position << ": " << records.status().ToString() << "\n";
      return;
    }
    for (const Record& r : *records)
      DumpRecord(r, b.timestamp_type(), b.is_control(), std::nullopt);
  }

  void DumpLegacy(const LogEntry& e, bool valid) {
    auto view = LegacyMessageView::Parse(e.bytes);
    if (!view.ok()) {
      err_ << "position " << e.position << ": " << view.status().ToString() << "\n";
      if (!o_.json) {
        out_ << fmt::format("offset: {} position: {} size: {} magic: {} isvalid: false\n",
                            e.prefix_offset(), e.position, e.size(), e.magic);
      }
      return;
    }
    TimestampType tt = view->magic() == 0 ? TimestampType::kNoTimestamp : view->timestamp_type();
    auto codec = CompressionFromId(view->compression_id());
    std::string codec_name = codec ? std::string(CompressionName(*codec)) : "unknown";
    if (o_.json) {
      out_ << nlohmann::json{{"type", "message"},
                             {"offset", view->offset()},
                             {"position", e.position},
                             {"timestampType", TimestampTypeName(tt)},
                             {"timestamp", view->timestamp()},
                             {"size", e.size()},
                             {"magic", int(view->magic())},
                             {"compression", codec_name},
                             {"crc", view->stored_crc()},
                             {"crcValid", valid}}
                  .dump()
           << "\n";
    } else {
      out_ << fmt::format(
          "offset: {} position: {} {}: {} size: {} magic: {} compresscodec: {} crc: {} "
          "isvalid: {}\n",
          view->offset(), e.position, TimestampTypeName(tt), view->timestamp(), e.size(),
          view->magic(), codec_name, view->stored_crc(), valid);
    }
    if (!o_.deep_iteration) return;
    // Each (inner) message reports its own CRC and validity, as Kafka's
    // deep iteration does; only the outer CRC decides `isvalid` above.
    auto records = view->DecodeDeep();
    if (!records.ok()) {
      err_ << "position " << e.position << ": " << records.status().ToString() << "\n";
      return;
    }
    for (const LegacyDeepRecord& d : *records) {
      DumpRecord(d.record, tt, false, LegacyCrc{d.crc_valid, d.crc});
    }
  }

  // `legacy` is set for v0/v1 records (they print CRC facts instead of
  // sequence and header keys).
  void DumpRecord(const Record& r, TimestampType tt, bool control,
                  const std::optional<LegacyCrc>& legacy) {
    if (last_record_offset_ && r.offset != *last_record_offset_ + 1) {
      non_consecutive_.emplace_back(*last_record_offset_, r.offset);
    }
    last_record_offset_ = r.offset;
    const bool print_data = o_.print_data_log && !control;
    if (o_.json) {
      DumpRecordJson(r, tt, control, legacy, print_data);
      return;
    }
    // kafka-dump-log: the "| " prefix goes before the first field printed; a
    // null key prints no `key:` and a null value no `payload:`.
    std::string line;
    std::string_view prefix = "| ";
    if (!o_.skip_record_metadata) {
      line = fmt::format("| offset: {} {}: {} keySize: {} valueSize: {}", r.offset,
                         TimestampTypeName(tt), r.timestamp, SizeOf(r.key), SizeOf(r.value));
      prefix = " ";
      if (legacy) {
        line += fmt::format(" isValid: {} crc: {}}}", legacy->valid, legacy->crc);
      } else {
        line += fmt::format(" sequence: {} headerKeys: {}", r.sequence, HeaderKeys(r));
      }
      if (control) line += ControlSuffix(r);
    }
    if (print_data) {
      if (r.key) line.append(prefix).append("key: ").append(*r.key);
      if (r.value) line.append(" payload: ").append(*r.value);
    }
    out_ << line << "\n";
  }

  void DumpRecordJson(const Record& r, TimestampType tt, bool control,
                      const std::optional<LegacyCrc>& legacy, bool print_data) {
    nlohmann::json j = {{"type", "record"},
                        {"offset", r.offset},
                        {"timestampType", TimestampTypeName(tt)},
                        {"timestamp", r.timestamp},
                        {"keySize", SizeOf(r.key)},
                        {"valueSize", SizeOf(r.value)}};
    if (legacy) {
      j["crc"] = legacy->crc;
      j["crcValid"] = legacy->valid;
    } else {
      j["sequence"] = r.sequence;
      nlohmann::json keys = nlohmann::json::array();
      for (const auto& h : r.headers) keys.push_back(h.key);
      j["headerKeys"] = keys;
    }
    if (control) {
      std::string suffix = ControlSuffix(r);
      j["control"] = suffix.empty() ? suffix : suffix.substr(1);
    }
    if (print_data) {
      j["key"] = r.key ? nlohmann::json(*r.key) : nlohmann::json();
      j["payload"] = r.value ? nlohmann::json(*r.value) : nlohmann::json();
    }
    out_ << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  }

  void ReportNonConsecutive(const std::string& path) {
    if (non_consecutive_.empty()) return;
    err_ << "Non-consecutive offsets in " << path << "\n";
    for (auto [a, b] : non_consecutive_) err_ << "  " << a << " is followed by " << b << "\n";
    non_consecutive_.clear();
  }

  const DumpOptions& o_;
  std::ostream& out_;
  std::ostream& err_;
  std::optional<int64_t> last_record_offset_;
  std::vector<std::pair<int64_t, int64_t>> non_consecutive_;
};

}  // namespace

int RunDump(const DumpOptions& options, std::ostream& out, std::ostream& err) {
  if (options.files.empty()) {
    err << "daruma dump: --files is required\n";
    return kUsageOrIo;
  }
  int rc = kClean;
  for (const auto& path : options.files) {
    if (!path.ends_with(".log")) {
      err << "daruma dump: " << path << ": only .log files are supported by this version\n";
      rc = std::max(rc, int(kUsageOrIo));
      continue;
    }
    Dumper dumper(options, out, err);
    rc = std::max(rc, dumper.DumpFile(path));
  }
  return rc;
}

}  // namespace daruma::tools
