// Builds magic v2 record batches byte-for-byte as Kafka's MemoryRecordsBuilder
// does (used by tests, the sample generator and later the broker).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "record/compression.h"
#include "record/control_record.h"
#include "record/record_batch.h"

namespace daruma {

struct BatchBuilderOptions {
  int64_t base_offset = 0;
  int32_t partition_leader_epoch = kNoPartitionLeaderEpoch;
  CompressionType compression = CompressionType::kNone;
  int compression_level = -1;  // < 0: the codec's Kafka default
  TimestampType timestamp_type = TimestampType::kCreateTime;
  int64_t producer_id = kNoProducerId;
  int16_t producer_epoch = kNoProducerEpoch;
  int32_t base_sequence = kNoSequence;
  bool is_transactional = false;
  bool is_control = false;
  // Set only for LogAppendTime batches: the broker's append time.
  int64_t log_append_time = kNoTimestamp;
  // With a delete horizon, baseTimestamp holds it and attribute bit 6 is set.
  std::optional<int64_t> delete_horizon_ms;
};

struct RecordInput {
  int64_t timestamp = kNoTimestamp;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<RecordHeader> headers;
  // Offset delta; -1 means "next" (previous delta + 1, starting at 0).
  int32_t offset_delta = -1;
};

// Builds one batch. Records get consecutive offset deltas unless given.
// Fails on an empty record list (use BuildEmptyBatch) or a codec error.
Result<Bytes> BuildRecordBatch(const BatchBuilderOptions& options,
                               const std::vector<RecordInput>& records);

// The v2 batch `batch` with its records compressed with `target` (at `level`,
// < 0 for the codec's default) instead, as Kafka's LogValidator rebuilds a
// batch for a topic whose compression.type differs from the producer's: the
// same base offset, partition leader epoch, timestamp type, producer id,
// epoch and base sequence, transactional bit, and the same records (offset
// deltas, timestamps, keys, values, headers). The records are decoded within
// `max_decompressed` bytes (kTooLarge beyond); a record that does not decode
// is its error.
Result<Bytes> RecompressRecordBatch(const RecordBatchView& batch, CompressionType target, int level,
                                    size_t max_decompressed);

// A COMMIT/ABORT marker batch (78 bytes), as the transaction coordinator writes.
Bytes BuildEndTxnMarkerBatch(int64_t base_offset, int32_t partition_leader_epoch,
                             int64_t producer_id, int16_t producer_epoch, ControlRecordType type,
                             int32_t coordinator_epoch, int64_t timestamp);

// Recomputes and stores the CRC of a batch in place (after header edits).
void RewriteBatchCrc(std::span<uint8_t> batch);
// Sets base offset (in place; not covered by the CRC).
void SetBatchBaseOffset(std::span<uint8_t> batch, int64_t base_offset);
// Sets the partition leader epoch (in place; not covered by the CRC).
void SetBatchPartitionLeaderEpoch(std::span<uint8_t> batch, int32_t epoch);

}  // namespace daruma
