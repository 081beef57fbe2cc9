// The in-memory state Kafka keeps per producer id (spec §10.6): its epoch, the
// metadata of its last (up to 5) data batches, the coordinator epoch of the
// last transaction marker, its last timestamp and the first offset of its open
// transaction, if any.
//
// Invariants:
//   * batches() holds at most kNumBatchesToRetain entries, oldest first, all
//     written with producer_epoch() (a new epoch clears the cache).
//   * current_txn_first_offset() is set iff the producer has a transaction
//     that no COMMIT/ABORT marker has closed yet.
// The class only records what it is told; validation (sequence order, fencing)
// lives in ProducerStateManager.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>

namespace daruma {

// Subtracts `delta` from a sequence with Kafka's wrap-around (0 -> 2^31-1); the
// inverse of IncrementSequence (spec §2.1, §9.7).
int32_t DecrementSequence(int32_t sequence, int32_t delta);

// One cached data batch of a producer.
struct BatchMetadata {
  int32_t last_seq = -1;
  int64_t last_offset = -1;
  int32_t offset_delta = 0;  // last_offset - first offset of the batch
  int64_t timestamp = -1;    // the batch's max timestamp

  int32_t FirstSeq() const { return DecrementSequence(last_seq, offset_delta); }
  int64_t FirstOffset() const { return last_offset - offset_delta; }
  bool operator==(const BatchMetadata&) const = default;
};

// The last (at most 5) batches of a producer, oldest first, stored inline: an
// entry is copied for every batch appended or replayed (ProducerAppendInfo
// works on a copy), and a std::deque's copy costs two allocations.
class RetainedBatches {
 public:
  static constexpr size_t kCapacity = 5;

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const BatchMetadata& front() const { return slots_[0]; }
  const BatchMetadata& back() const { return slots_[size_ - 1]; }
  const BatchMetadata* begin() const { return slots_.data(); }
  const BatchMetadata* end() const { return slots_.data() + size_; }
  const BatchMetadata& operator[](size_t i) const { return slots_[i]; }
  // Appends `batch`, evicting the oldest when full.
  void push_back(const BatchMetadata& batch);
  void clear() { size_ = 0; }
  bool operator==(const RetainedBatches& other) const;

 private:
  std::array<BatchMetadata, kCapacity> slots_{};
  size_t size_ = 0;
};

class ProducerStateEntry {
 public:
  static constexpr size_t kNumBatchesToRetain = RetainedBatches::kCapacity;

  // A producer never seen before: epoch -1, coordinator epoch -1, no batches.
  static ProducerStateEntry Empty(int64_t producer_id);

  ProducerStateEntry(int64_t producer_id, int16_t producer_epoch, int32_t coordinator_epoch,
                     int64_t last_timestamp, std::optional<int64_t> current_txn_first_offset,
                     std::optional<BatchMetadata> first_batch);

  int64_t producer_id() const { return producer_id_; }
  int16_t producer_epoch() const { return producer_epoch_; }
  int32_t coordinator_epoch() const { return coordinator_epoch_; }
  int64_t last_timestamp() const { return last_timestamp_; }
  std::optional<int64_t> current_txn_first_offset() const { return current_txn_first_offset_; }
  const RetainedBatches& batches() const { return batches_; }

  bool IsEmpty() const { return batches_.empty(); }
  // Sequence/offset views of the cache; -1 (offset delta 0) when it is empty.
  int32_t FirstSeq() const;
  int32_t LastSeq() const;
  int64_t FirstDataOffset() const;
  int64_t LastDataOffset() const;
  int32_t LastOffsetDelta() const;

  // Records a data batch: switches to `epoch` (clearing the cache if it
  // differs), appends the batch (evicting the oldest beyond 5) and sets the
  // last timestamp to `timestamp`.
  void AddBatch(int16_t epoch, int32_t last_seq, int64_t last_offset, int32_t offset_delta,
                int64_t timestamp);
  // Clears the batch cache if `epoch` differs from the current one. Returns
  // whether the epoch changed.
  bool MaybeUpdateProducerEpoch(int16_t epoch);
  // Applies a COMMIT/ABORT marker: epoch switch, coordinator epoch, last
  // timestamp = marker time, and no open transaction any more.
  void EndTransaction(int16_t epoch, int32_t coordinator_epoch, int64_t timestamp);
  void SetCurrentTxnFirstOffset(int64_t first_offset) { current_txn_first_offset_ = first_offset; }

  // The cached batch with exactly this epoch and sequence range, if any: a
  // retried produce request that was already written.
  std::optional<BatchMetadata> FindDuplicateBatch(int16_t epoch, int32_t first_seq,
                                                  int32_t last_seq) const;

  bool operator==(const ProducerStateEntry&) const = default;

 private:
  int64_t producer_id_;
  int16_t producer_epoch_;
  int32_t coordinator_epoch_;
  int64_t last_timestamp_;
  std::optional<int64_t> current_txn_first_offset_;
  RetainedBatches batches_;
};

}  // namespace daruma
