#include "record/log_entry.h"

#include <fmt/format.h>

#include "record/legacy_message.h"

namespace daruma {

Status LogEntry::Validate() const {
  // The context is formatted only on failure: this runs once per batch in
  // every recovery scan.
  if (is_v2()) {
    Status valid = RecordBatchView(bytes).Validate();
    if (valid.ok()) return valid;
    return valid.WithContext(fmt::format("batch at position {}", position));
  }
  Status valid = LegacyMessageView(bytes).Validate();
  if (valid.ok()) return valid;
  return valid.WithContext(fmt::format("message at position {}", position));
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
