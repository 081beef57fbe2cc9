#include "record/log_entry.h"

#include <fmt/format.h>

#include "record/legacy_message.h"

namespace daruma {

Status LogEntry::Validate() const {
  if (is_v2()) {
    if (bytes.size() < size_t(kRecordBatchOverhead)) {
      return Status::Corruption(
          fmt::format("batch at position {}: field size: expected >= 61 bytes, found {}", position,
                      bytes.size()));
    }
    RecordBatchView view(bytes);
    uint32_t computed = view.ComputeCrc();
    if (computed != view.stored_crc()) {
      return Status::Corruption(fmt::format(
          "batch at position {} (base offset {}): field crc: expected 0x{:08x}, found 0x{:08x}",
          position, view.base_offset(), computed, view.stored_crc()));
    }
    return Status::Ok();
  }
  Status st = LegacyMessageView(bytes).Validate();
  if (!st.ok()) return st.WithContext(fmt::format("message at position {}", position));
  return st;
}

int64_t LogEntry::last_offset() const {
  if (is_v2()) return batch().last_offset();
  return prefix_offset();
}

int64_t LogEntry::max_timestamp() const {
  if (is_v2()) return batch().max_timestamp();
  return LegacyMessageView(bytes).timestamp();
}

int32_t LogEntry::partition_leader_epoch() const {
  if (is_v2()) return batch().partition_leader_epoch();
  return kNoPartitionLeaderEpoch;
}

}  // namespace daruma
