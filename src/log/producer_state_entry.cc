#include "log/producer_state_entry.h"

#include <algorithm>
#include <limits>

namespace daruma {

int32_t DecrementSequence(int32_t sequence, int32_t delta) {
  if (sequence < delta) {
    return std::numeric_limits<int32_t>::max() - (delta - sequence) + 1;
  }
  return sequence - delta;
}

void RetainedBatches::push_back(const BatchMetadata& batch) {
  if (size_ == kCapacity) {
    std::move(slots_.begin() + 1, slots_.end(), slots_.begin());
    --size_;
  }
  slots_[size_++] = batch;
}

bool RetainedBatches::operator==(const RetainedBatches& other) const {
  return std::equal(begin(), end(), other.begin(), other.end());
}

ProducerStateEntry ProducerStateEntry::Empty(int64_t producer_id) {
  return ProducerStateEntry(producer_id, /*producer_epoch=*/-1, /*coordinator_epoch=*/-1,
                            /*last_timestamp=*/-1, std::nullopt, std::nullopt);
}

ProducerStateEntry::ProducerStateEntry(int64_t producer_id, int16_t producer_epoch,
                                       int32_t coordinator_epoch, int64_t last_timestamp,
                                       std::optional<int64_t> current_txn_first_offset,
                                       std::optional<BatchMetadata> first_batch)
    : producer_id_(producer_id),
      producer_epoch_(producer_epoch),
      coordinator_epoch_(coordinator_epoch),
      last_timestamp_(last_timestamp),
      current_txn_first_offset_(current_txn_first_offset) {
  if (first_batch) batches_.push_back(*first_batch);
}

int32_t ProducerStateEntry::FirstSeq() const {
  return IsEmpty() ? -1 : batches_.front().FirstSeq();
}

int32_t ProducerStateEntry::LastSeq() const {
  return IsEmpty() ? -1 : batches_.back().last_seq;
}

int64_t ProducerStateEntry::FirstDataOffset() const {
  return IsEmpty() ? -1 : batches_.front().FirstOffset();
}

int64_t ProducerStateEntry::LastDataOffset() const {
  return IsEmpty() ? -1 : batches_.back().last_offset;
}

int32_t ProducerStateEntry::LastOffsetDelta() const {
  return IsEmpty() ? 0 : batches_.back().offset_delta;
}

void ProducerStateEntry::AddBatch(int16_t epoch, int32_t last_seq, int64_t last_offset,
                                  int32_t offset_delta, int64_t timestamp) {
  MaybeUpdateProducerEpoch(epoch);
  batches_.push_back(BatchMetadata{last_seq, last_offset, offset_delta, timestamp});
  last_timestamp_ = timestamp;
}

bool ProducerStateEntry::MaybeUpdateProducerEpoch(int16_t epoch) {
  if (producer_epoch_ == epoch) return false;
  batches_.clear();
  producer_epoch_ = epoch;
  return true;
}

void ProducerStateEntry::EndTransaction(int16_t epoch, int32_t coordinator_epoch,
                                        int64_t timestamp) {
  MaybeUpdateProducerEpoch(epoch);
  coordinator_epoch_ = coordinator_epoch;
  current_txn_first_offset_.reset();
  last_timestamp_ = timestamp;
}

std::optional<BatchMetadata> ProducerStateEntry::FindDuplicateBatch(int16_t epoch,
                                                                    int32_t first_seq,
                                                                    int32_t last_seq) const {
  if (epoch != producer_epoch_) return std::nullopt;
  for (const BatchMetadata& batch : batches_) {
    if (batch.FirstSeq() == first_seq && batch.last_seq == last_seq) return batch;
  }
  return std::nullopt;
}

}  // namespace daruma
