// Control records (spec §2.5): the 4-byte key (version, type) of every control
// record and the 6-byte value of end-transaction markers (COMMIT/ABORT).
#pragma once

#include <cstdint>
#include <optional>

#include "common/bytes.h"
#include "common/status.h"
#include "record/record_batch.h"

namespace daruma {

enum class ControlRecordType : int16_t {
  kAbort = 0,
  kCommit = 1,
  kLeaderChange = 2,
  kSnapshotHeader = 3,
  kSnapshotFooter = 4,
  kKraftVersion = 5,
  kKraftVoters = 6,
  kUnknown = -1,
};

const char* ControlRecordTypeName(ControlRecordType type);  // "ABORT", "COMMIT", ...

// Parses a control record key. A key shorter than 4 bytes or with a negative
// version is invalid; unknown type values map to kUnknown.
Result<ControlRecordType> ParseControlRecordKey(ByteSpan key);

// The type of a control batch's first record (Kafka reads only the first);
// nullopt when the batch holds none (the cleaner empties finished markers),
// or its records or key do not parse.
std::optional<ControlRecordType> FirstControlRecordType(const RecordBatchView& batch);

struct EndTxnMarker {
  ControlRecordType type = ControlRecordType::kCommit;  // kCommit or kAbort
  int32_t coordinator_epoch = 0;
};

// Parses the value of a COMMIT/ABORT record (version i16, coordinatorEpoch i32).
Result<int32_t> ParseEndTxnMarkerCoordinatorEpoch(ByteSpan value);

Bytes EncodeControlRecordKey(ControlRecordType type);
Bytes EncodeEndTxnMarkerValue(int32_t coordinator_epoch);

}  // namespace daruma
