#include "tools/dump_log.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>

#include "common/file_system.h"
#include "common/utf8.h"
#include "log/log_file_names.h"
#include "record/control_record.h"
#include "record/file_batch_reader.h"
#include "record/legacy_message.h"
#include "tools/kraft_control_record_decoder.h"

namespace daruma::tools {

// Kafka's StringDecoder is `new String(bytes, UTF_8)`: ill-formed bytes
// print as U+FFFD, as they do in kafka-dump-log.
DecodedKeyValue DecodeAsStrings(const Record& record) {
  DecodedKeyValue out;
  if (record.key) out.key = ReplaceInvalidUtf8(*record.key);
  if (record.value) out.payload = ReplaceInvalidUtf8(*record.value);
  return out;
}

namespace {

std::string HeaderKeys(const Record& r) {
  std::string out = "[";
  for (size_t i = 0; i < r.headers.size(); ++i) {
    if (i) out += ",";
    out += ReplaceInvalidUtf8(r.headers[i].key);  // Kafka decodes header keys as UTF-8
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
  // KRaft's as kafka-dump-log decodes them; other types (and a KRaft record
  // that does not decode) by name and raw type id.
  if (r.value) {
    if (auto kraft = DescribeKraftControlRecord(*type, *r.value)) return " " + *kraft;
  }
  const int16_t id = int16_t(LoadBe16(AsBytes(*r.key).data() + 2));
  return fmt::format(" controlType: {}({})", ControlRecordTypeName(*type), id);
}

// Per-message CRC facts of a legacy record, printed by deep iteration.
struct LegacyCrc {
  bool valid = false;
  uint32_t crc = 0;
};

// The header line Kafka prints before the batches of a data file.
std::string StartLine(const std::string& name) {
  if (name == "bootstrap.checkpoint") return "KRaft bootstrap snapshot";
  if (name.ends_with(".checkpoint")) {
    // <20-digit end offset>-<10-digit epoch>.checkpoint
    auto dash = name.find('-');
    auto dot = name.rfind('.');
    if (dash != std::string::npos && dash < dot) {
      try {
        return fmt::format("Snapshot end offset: {}, epoch: {}", std::stoll(name.substr(0, dash)),
                           std::stoi(name.substr(dash + 1, dot - dash - 1)));
      } catch (...) {
      }
    }
    return "Snapshot end offset: unknown";
  }
  auto offset = OffsetFromFileName(name);
  return fmt::format("Log starting offset: {}", offset.ok() ? *offset : 0);
}

class LogDumper {
 public:
  LogDumper(const std::string& path, RecordDecoder decoder, DumpContext& ctx)
      : path_(path), decoder_(decoder), ctx_(ctx), o_(ctx.options) {}

  int Dump() {
    auto file = FileSystem::Default()->Open(path_, OpenMode::kRead);
    if (!file.ok()) {
      ctx_.err << "daruma dump: " << file.status().ToString() << "\n";
      return kDumpUsageOrIo;
    }
    if (!o_.json) ctx_.out << StartLine(FileNameOf(path_)) << "\n";
    FileBatchReaderOptions ro;
    ro.end_position = uint64_t(std::max<int64_t>(o_.max_bytes, 0));
    FileBatchReader reader(file->get(), ro);
    int rc = kDumpClean;
    while (auto entry = reader.Next()) {
      if (!DumpEntry(*entry)) rc = kDumpCorrupt;
    }
    if (reader.stop_reason() == StopReason::kIoError) {
      ctx_.err << "daruma dump: " << reader.stop_message() << "\n";
      return kDumpUsageOrIo;
    }
    // Kafka reports trailing bytes only when --max-bytes was left at its
    // default (Integer.MAX_VALUE); a smaller limit may cut a batch on purpose.
    const bool unlimited = o_.max_bytes >= INT32_MAX;
    if (reader.stop_reason() != StopReason::kEndOfFile && unlimited) {
      ReportInvalidTail(reader);
      rc = kDumpCorrupt;
    }
    return rc;
  }

 private:
  void ReportInvalidTail(const FileBatchReader& reader) {
    uint64_t invalid = reader.end() - reader.position();
    if (o_.json) {
      ctx_.out << nlohmann::ordered_json{{"type", "invalidBytes"},
                                         {"file", path_},
                                         {"position", reader.position()},
                                         {"bytes", invalid},
                                         {"kind", DamageKindName(*reader.damage())},
                                         {"reason", StopReasonName(reader.stop_reason())},
                                         {"message", reader.stop_message()}}
                      .dump()
               << "\n";
    } else {
      ctx_.out << "Found " << invalid << " invalid bytes at the end of " << FileNameOf(path_)
               << "\n";
    }
    ctx_.err << reader.stop_message() << "\n";
  }

  // Returns false when the entry is invalid.
  bool DumpEntry(const LogEntry& e) {
    Status valid = e.Validate();
    if (e.is_v2() && e.has_batch_header()) {
      DumpV2(e, valid.ok());
    } else {
      DumpLegacy(e, valid.ok());
    }
    if (!valid.ok()) ctx_.err << valid.message() << "\n";
    return valid.ok();
  }

  void DumpV2(const LogEntry& e, bool valid) {
    RecordBatchView b = e.batch();
    if (o_.json) {
      nlohmann::ordered_json j = {
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
          {"deleteHorizonMs", b.delete_horizon_ms() ? nlohmann::ordered_json(*b.delete_horizon_ms())
                                                    : nlohmann::ordered_json()},
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
      ctx_.out << j.dump() << "\n";
    } else {
      auto horizon = b.delete_horizon_ms();
      ctx_.out << fmt::format(
          "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: {} "
          "producerId: {} producerEpoch: {} partitionLeaderEpoch: {} isTransactional: {} "
          "isControl: {} deleteHorizonMs: {} position: {} {}: {} size: {} magic: {} "
          "compresscodec: {} crc: {} isvalid: {}\n",
          b.base_offset(), b.last_offset(), b.records_count(), b.base_sequence(), b.last_sequence(),
          b.producer_id(), b.producer_epoch(), b.partition_leader_epoch(), b.is_transactional(),
          b.is_control(), OptionalLongString(horizon.has_value(), horizon.value_or(0)), e.position,
          TimestampTypeName(b.timestamp_type()), b.max_timestamp(), e.size(), b.magic(),
          CompressionName(b.compression()), b.stored_crc(), valid);
    }
    if (!o_.deep_iteration) return;
    auto records = b.DecodeRecords(kToolMaxDecompressedBytes);
    if (!records.ok()) {
      ctx_.err << "position " << e.position << ": " << records.status().ToString() << "\n";
      return;
    }
    for (const Record& r : *records) {
      DumpRecord(r, b.timestamp_type(), b.is_control(), std::nullopt);
    }
  }

  void DumpLegacy(const LogEntry& e, bool valid) {
    auto view = LegacyMessageView::Parse(e.bytes);
    if (!view.ok()) {
      ctx_.err << "position " << e.position << ": " << view.status().ToString() << "\n";
      if (!o_.json) {
        ctx_.out << fmt::format("offset: {} position: {} size: {} magic: {} isvalid: false\n",
                                e.prefix_offset(), e.position, e.size(), e.magic);
      }
      return;
    }
    TimestampType tt = view->magic() == 0 ? TimestampType::kNoTimestamp : view->timestamp_type();
    auto codec = CompressionFromId(view->compression_id());
    std::string codec_name = codec ? std::string(CompressionName(*codec)) : "unknown";
    if (o_.json) {
      ctx_.out << nlohmann::ordered_json{{"type", "message"},
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
      ctx_.out << fmt::format(
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
      ctx_.err << "position " << e.position << ": " << records.status().ToString() << "\n";
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
      ctx_.summary.non_consecutive.Add(AbsolutePath(path_), *last_record_offset_, r.offset);
    }
    last_record_offset_ = r.offset;
    const bool print_data = o_.print_data_log && !control;
    std::optional<DecodedKeyValue> data;
    if (print_data) data = decoder_(r);
    if (o_.json) {
      DumpRecordJson(r, tt, control, legacy, data);
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
    if (data) {
      if (data->key) line.append(prefix).append("key: ").append(*data->key);
      if (data->payload) line.append(" payload: ").append(*data->payload);
    }
    ctx_.out << line << "\n";
  }

  void DumpRecordJson(const Record& r, TimestampType tt, bool control,
                      const std::optional<LegacyCrc>& legacy,
                      const std::optional<DecodedKeyValue>& data) {
    nlohmann::ordered_json j = {{"type", "record"},
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
      nlohmann::ordered_json keys = nlohmann::ordered_json::array();
      for (const auto& h : r.headers) keys.push_back(ReplaceInvalidUtf8(h.key));
      j["headerKeys"] = keys;
    }
    if (control) {
      std::string suffix = ControlSuffix(r);
      j["control"] = suffix.empty() ? suffix : suffix.substr(1);
    }
    if (data) {
      j["key"] = data->key ? nlohmann::ordered_json(*data->key) : nlohmann::ordered_json();
      j["payload"] =
          data->payload ? nlohmann::ordered_json(*data->payload) : nlohmann::ordered_json();
    }
    ctx_.out << j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  }

  const std::string& path_;
  RecordDecoder decoder_;
  DumpContext& ctx_;
  const DumpOptions& o_;
  std::optional<int64_t> last_record_offset_;
};

}  // namespace

int DumpLogFile(const std::string& path, RecordDecoder decoder, DumpContext& ctx) {
  return LogDumper(path, decoder, ctx).Dump();
}

}  // namespace daruma::tools
