// What the group coordinator's source files share (not part of its API):
// the records it writes, how an append failure reaches a committing client,
// and the replay of one `__consumer_offsets` partition that Load runs.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/group_metadata.h"
#include "coordinator/offsets_records.h"
#include "protocol/error_codes.h"
#include "record/record_batch_builder.h"

namespace daruma::group_internal {

// An offset record; a null value is the offset's tombstone.
RecordInput OffsetRecord(const std::string& group, const std::string& topic, int32_t partition,
                         const std::optional<OffsetCommitValue>& value);
// A group metadata record; a null value is the group's tombstone.
RecordInput GroupRecord(const std::string& group, const std::optional<GroupMetadataValue>& value);

// A commit's offsets before they are stored: each partition whose metadata
// exceeds offset.metadata.max.bytes is OFFSET_METADATA_TOO_LARGE in `errors`;
// every other one becomes its CommittedOffset (timestamps set by the caller's
// `stamp`) and its record, in request order.
struct PreparedOffsets {
  std::vector<ErrorCode> errors;
  std::vector<RecordInput> records;
  std::vector<std::pair<size_t, CommittedOffset>> accepted;  // (request index, offset)
};
PreparedOffsets PrepareOffsets(
    const std::string& group, const std::vector<OffsetCommitArgs::Partition>& partitions,
    int32_t metadata_max_bytes,
    const std::function<void(const OffsetCommitArgs::Partition&, CommittedOffset&)>& stamp);

// Kafka's mapping of an append failure to what a committing client sees
// (GroupMetadataManager.maybeConvertOffsetCommitError).
ErrorCode CommitErrorFor(const Status& status);

inline ByteSpan AsBytes(const std::optional<std::string>& s) {
  return {reinterpret_cast<const uint8_t*>(s->data()), s->size()};
}

// One `__consumer_offsets` partition replayed in log order (Kafka's loader,
// GroupMetadataManager.doLoadGroupsAndOffsets, with 4.0's
// OffsetMetadataManager.replay and replayEndTransactionMarker): a plain
// offset record sets the committed offset, a plain tombstone removes it and
// every pending one of the partition; a transactional batch's offsets are
// pending for its producer until that producer's next marker, which applies
// them (COMMIT) or drops them (ABORT). Records in a transactional batch that
// are tombstones drop only that producer's pending offset (Kafka's 3.x
// loader; Kafka never writes them).
class OffsetsReplay {
 public:
  struct Group {
    Group(const std::string& id, int64_t now_ms) : offsets(id, now_ms) {}
    // Only its offsets() and pending_txn_offsets() are replayed.
    GroupMetadata offsets;
    // The last metadata record's value; nullopt without one or after a tombstone.
    std::optional<GroupMetadataValue> metadata;
  };

  explicit OffsetsReplay(int64_t now_ms) : now_ms_(now_ms) {}

  // The offset record at `record_offset`; `producer_id` is set for a record
  // of a transactional batch.
  void Offset(const OffsetCommitKey& key, const std::optional<OffsetCommitValue>& value,
              int64_t record_offset, std::optional<int64_t> producer_id);
  void Metadata(const std::string& group, std::optional<GroupMetadataValue> value);
  // A COMMIT (`commit`) or ABORT marker of `producer_id`.
  void Marker(int64_t producer_id, bool commit);

  std::map<std::string, Group>& groups() { return groups_; }

 private:
  Group& GroupFor(const std::string& id);

  int64_t now_ms_;
  std::map<std::string, Group> groups_;
  // Producer -> the groups it has pending offsets in.
  std::map<int64_t, std::set<std::string>> open_;
};

}  // namespace daruma::group_internal
