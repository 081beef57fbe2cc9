#include "record/control_record.h"

#include <fmt/format.h>

#include <vector>

namespace daruma {

const char* ControlRecordTypeName(ControlRecordType type) {
  switch (type) {
    case ControlRecordType::kAbort:
      return "ABORT";
    case ControlRecordType::kCommit:
      return "COMMIT";
    case ControlRecordType::kLeaderChange:
      return "LEADER_CHANGE";
    case ControlRecordType::kSnapshotHeader:
      return "SNAPSHOT_HEADER";
    case ControlRecordType::kSnapshotFooter:
      return "SNAPSHOT_FOOTER";
    case ControlRecordType::kKraftVersion:
      return "KRAFT_VERSION";
    case ControlRecordType::kKraftVoters:
      return "KRAFT_VOTERS";
    case ControlRecordType::kUnknown:
      return "UNKNOWN";
  }
  return "UNKNOWN";
}

Result<ControlRecordType> ParseControlRecordKey(ByteSpan key) {
  if (key.size() < 4) {
    return Status::InvalidRecord(
        fmt::format("control record key: expected at least 4 bytes, found {}", key.size()));
  }
  int16_t version = int16_t(LoadBe16(key.data()));
  if (version < 0) {
    return Status::InvalidRecord(
        fmt::format("control record key field version: expected >= 0, found {}", version));
  }
  int16_t type = int16_t(LoadBe16(key.data() + 2));
  if (type < 0 || type > 6) return ControlRecordType::kUnknown;
  return ControlRecordType(type);
}

Result<int32_t> ParseEndTxnMarkerCoordinatorEpoch(ByteSpan value) {
  if (value.size() < 6) {
    return Status::InvalidRecord(fmt::format(
        "end transaction marker value: expected at least 6 bytes, found {}", value.size()));
  }
  int16_t version = int16_t(LoadBe16(value.data()));
  if (version < 0) {
    return Status::InvalidRecord(
        fmt::format("end transaction marker field version: expected >= 0, found {}", version));
  }
  return int32_t(LoadBe32(value.data() + 2));
}

Bytes EncodeControlRecordKey(ControlRecordType type) {
  Bytes out(4);
  StoreBe16(out.data(), 0);
  StoreBe16(out.data() + 2, uint16_t(int16_t(type)));
  return out;
}

Bytes EncodeEndTxnMarkerValue(int32_t coordinator_epoch) {
  Bytes out(6);
  StoreBe16(out.data(), 0);
  StoreBe32(out.data() + 2, uint32_t(coordinator_epoch));
  return out;
}

std::optional<ControlRecordType> FirstControlRecordType(const RecordBatchView& batch) {
  Result<std::vector<Record>> records = batch.DecodeRecords();
  if (!records.ok() || records->empty() || !records->front().key) return std::nullopt;
  Result<ControlRecordType> type = ParseControlRecordKey(AsBytes(*records->front().key));
  return type.ok() ? std::optional<ControlRecordType>(*type) : std::nullopt;
}

}  // namespace daruma
