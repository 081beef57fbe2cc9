// Transactional offset commits (KIP-98, KIP-447): TxnOffsetCommit, the end of
// a transaction that committed offsets, and their replay by Load (Kafka's
// GroupCoordinator.handleTxnCommitOffsets, GroupMetadataManager.storeOffsets
// and handleTxnCompletion; 4.0's OffsetMetadataManager).
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "coordinator/group_coordinator.h"
#include "coordinator/group_coordinator_internal.h"

namespace daruma {

using group_internal::CommitErrorFor;
using group_internal::PreparedOffsets;
using group_internal::PrepareOffsets;

// Kafka's validateOffsetCommit with isTransactional: an empty group takes a
// commit without a generation from anyone (a producer of a simple consumer
// or an admin tool); given a generation, member or instance id they must be
// the group's current ones; a group with members takes one without them
// (TxnOffsetCommit before v3 has no member fields); the group's state is not
// enforced otherwise (no REBALANCE_IN_PROGRESS).
ErrorCode GroupCoordinator::ValidateTxnOffsetCommit(GroupMetadata& group,
                                                    const TxnOffsetCommitArgs& args) {
  if (group.Is(GroupState::kDead)) return ErrorCode::kCoordinatorNotAvailable;
  if (args.generation_id < 0 && group.Is(GroupState::kEmpty)) return ErrorCode::kNone;
  if (args.generation_id >= 0 || !args.member_id.empty() || args.group_instance_id) {
    if (ErrorCode e = CheckMember(group, args.member_id, args.group_instance_id);
        e != ErrorCode::kNone) {
      return e;
    }
    if (args.generation_id != group.generation_id()) return ErrorCode::kIllegalGeneration;
  }
  return ErrorCode::kNone;
}

std::vector<ErrorCode> GroupCoordinator::CommitTransactionalOffsets(
    const TxnOffsetCommitArgs& args) {
  Locked locked(*this);
  auto all = [&](ErrorCode e) { return std::vector<ErrorCode>(args.partitions.size(), e); };
  if (ErrorCode e = AvailabilityLocked(args.group_id); e != ErrorCode::kNone) return all(e);
  if (args.group_id.empty()) return all(ErrorCode::kInvalidGroupId);
  // Without a producer the batch would not be transactional and its offsets
  // would count at once; the broker's transaction check rejects this first.
  if (args.producer_id < 0) return all(ErrorCode::kInvalidProducerIdMapping);
  GroupMetadata* group = FindGroup(args.group_id);
  if (group == nullptr) {
    // Kafka 4.0: only a commit without a generation creates the group (a
    // simple consumer's); with one the member cannot be in it.
    if (args.generation_id >= 0) return all(ErrorCode::kIllegalGeneration);
    group = &CreateGroupLocked(args.group_id);
  }
  if (ErrorCode e = ValidateTxnOffsetCommit(*group, args); e != ErrorCode::kNone) return all(e);

  const int64_t now = clock_->NowMs();
  // Kafka stamps transactional offsets with the commit's time and no expiry.
  PreparedOffsets prepared = PrepareOffsets(
      args.group_id, args.partitions, config_.offset_metadata_max_bytes,
      [now](const OffsetCommitArgs::Partition&, CommittedOffset& c) { c.commit_timestamp = now; });
  std::vector<ErrorCode>& errors = prepared.errors;
  const std::vector<RecordInput>& records = prepared.records;
  std::vector<std::pair<size_t, CommittedOffset>>& accepted = prepared.accepted;
  if (records.empty()) return errors;
  // Appended under the lock, as plain commits are: the log order of the
  // group's records is the order they change it in memory, which Load and
  // the "written later" rule of a COMMIT rely on.
  Result<int64_t> stored =
      storage_->Append(PartitionFor(args.group_id), records,
                       ProducerBatchInfo{args.producer_id, args.producer_epoch});
  if (!stored.ok()) {
    // Nothing became pending: the client retries (Kafka's
    // failPendingTxnOffsetCommit).
    for (const auto& [i, c] : accepted) errors[i] = CommitErrorFor(stored.status());
    return errors;
  }
  GroupOffsetMap& pending = group->pending_txn_offsets()[args.producer_id];
  for (size_t k = 0; k < accepted.size(); ++k) {
    auto& [i, c] = accepted[k];
    const OffsetCommitArgs::Partition& p = args.partitions[i];
    c.record_offset = *stored + int64_t(k);
    pending[{p.topic, p.partition}] = std::move(c);
  }
  txn_groups_[args.producer_id].insert(args.group_id);
  return errors;
}

void GroupCoordinator::CompleteTransaction(int64_t producer_id, int32_t offsets_partition,
                                           bool commit) {
  Locked locked(*this);
  if (shut_down_) return;
  if (!loaded_) {
    early_completions_.push_back({producer_id, offsets_partition, commit});
    return;
  }
  CompleteTransactionLocked(producer_id, offsets_partition, commit);
}

void GroupCoordinator::CompleteTransactionLocked(int64_t producer_id, int32_t offsets_partition,
                                                 bool commit) {
  auto open = txn_groups_.find(producer_id);
  if (open == txn_groups_.end()) return;
  std::set<std::string>& ids = open->second;
  for (auto it = ids.begin(); it != ids.end();) {
    // The marker ends the transaction on its partition only; the producer's
    // groups elsewhere wait for their own partition's marker.
    if (PartitionFor(*it) != offsets_partition) {
      ++it;
      continue;
    }
    if (GroupMetadata* group = FindGroup(*it)) group->CompleteTxn(producer_id, commit);
    it = ids.erase(it);
  }
  if (ids.empty()) txn_groups_.erase(open);
}

namespace group_internal {

OffsetsReplay::Group& OffsetsReplay::GroupFor(const std::string& id) {
  return groups_.try_emplace(id, id, now_ms_).first->second;
}

void OffsetsReplay::Offset(const OffsetCommitKey& key,
                           const std::optional<OffsetCommitValue>& value, int64_t record_offset,
                           std::optional<int64_t> producer_id) {
  GroupMetadata& group = GroupFor(key.group).offsets;
  const std::pair<std::string, int32_t> tp{key.topic, key.partition};
  if (!value) {
    if (!producer_id) {
      group.RemoveOffset(tp);
    } else if (auto it = group.pending_txn_offsets().find(*producer_id);
               it != group.pending_txn_offsets().end()) {
      it->second.erase(tp);
    }
    return;
  }
  CommittedOffset c{value->offset,           value->leader_epoch,     value->metadata,
                    value->commit_timestamp, value->expire_timestamp, record_offset};
  if (producer_id) {
    group.pending_txn_offsets()[*producer_id][tp] = std::move(c);
    open_[*producer_id].insert(key.group);
  } else {
    group.offsets()[tp] = std::move(c);
  }
}

void OffsetsReplay::Metadata(const std::string& group, std::optional<GroupMetadataValue> value) {
  GroupFor(group).metadata = std::move(value);
}

void OffsetsReplay::Marker(int64_t producer_id, bool commit) {
  auto open = open_.find(producer_id);
  if (open == open_.end()) return;
  for (const std::string& id : open->second) GroupFor(id).offsets.CompleteTxn(producer_id, commit);
  open_.erase(open);
}

}  // namespace group_internal

}  // namespace daruma
