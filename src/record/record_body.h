// A v2 record read in place (spec §5.3): the fields of one record's body,
// checked exactly as RecordBatchView::DecodeRecords checks them, as views
// into the batch instead of owned strings. DecodeRecords builds its Records
// from these; a reader that needs one field of a small batch (an
// end-transaction marker's key and value) uses them without allocating.
#pragma once

#include <cstdint>
#include <optional>

#include "common/bytes.h"
#include "record/record_batch.h"

namespace daruma {

struct RecordBodyView {
  int8_t attributes = 0;
  int64_t timestamp_delta = 0;
  int32_t offset_delta = 0;
  std::optional<ByteSpan> key;
  std::optional<ByteSpan> value;
  int32_t header_count = 0;
  ByteSpan headers;  // header_count headers, each already checked

  // The record's timestamp in `batch` (LogAppendTime: the batch's).
  int64_t Timestamp(const RecordBatchView& batch) const {
    return batch.timestamp_type() == TimestampType::kLogAppendTime
               ? batch.max_timestamp()
               : batch.base_timestamp() + timestamp_delta;
  }
};

// Parses `body`, a record's bytes after its length varint. Returns nullptr,
// or what is wrong with it (the text DecodeRecords reports).
const char* ParseRecordBody(ByteSpan body, RecordBodyView* out);

// The only record of an uncompressed batch holding exactly one, when
// DecodeRecords would accept the batch (the record is well formed and
// nothing follows it); nullopt for any other batch.
std::optional<RecordBodyView> OnlyRecordInPlace(const RecordBatchView& batch);

}  // namespace daruma
