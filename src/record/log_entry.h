// LogEntry: one shallow entry of a `.log` file (a v2 batch or a legacy v0/v1
// message), as the file reader yields it, with a uniform batch-level view.
#pragma once

#include <cstdint>

#include "common/bytes.h"
#include "common/status.h"
#include "record/record_batch.h"

namespace daruma {

// Batch-level facts common to v2 batches and legacy entries.
struct LogEntry {
  int64_t position = 0;  // byte position in the file
  ByteSpan bytes;        // the whole entry: 12-byte prefix + body
  int8_t magic = 2;

  size_t size() const { return bytes.size(); }
  // Offset field of the 12-byte prefix: the base offset of a v2 batch, the
  // (last) offset of a legacy entry.
  int64_t prefix_offset() const { return int64_t(LoadBe64(bytes.data())); }
  bool is_v2() const { return magic >= 2; }
  // False for a v2 entry shorter than the 61-byte batch header: the reader
  // yields such entries (spec §5 checks only size >= 14), and only Validate()
  // rejects them. Legacy entries always have their header.
  bool has_batch_header() const { return !is_v2() || bytes.size() >= size_t(kRecordBatchOverhead); }
  RecordBatchView batch() const { return RecordBatchView(bytes); }

  // Kafka's ensureValid (spec §5): v2 size >= 61 and CRC-32C; legacy size >= 14
  // and CRC-32 of the outer message.
  Status Validate() const;

  // Batch-level accessors valid for both formats (legacy: no producer, epoch -1).
  // Precondition: has_batch_header() (which Validate() implies).
  int64_t last_offset() const;
  int64_t max_timestamp() const;
  int32_t partition_leader_epoch() const;
};

}  // namespace daruma
