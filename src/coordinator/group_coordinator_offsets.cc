// Committed offsets, group administration and loading `__consumer_offsets`
// (Kafka's GroupCoordinator offset paths and GroupMetadataManager).
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "coordinator/group_coordinator.h"
#include "coordinator/group_coordinator_internal.h"
#include "coordinator/producer_append_errors.h"
#include "log/producer_append_info.h"
#include "record/control_record.h"

namespace daruma {

namespace group_internal {

RecordInput OffsetRecord(const std::string& group, const std::string& topic, int32_t partition,
                         const std::optional<OffsetCommitValue>& value) {
  RecordInput r;
  const Bytes key = EncodeOffsetCommitKey({group, topic, partition});
  r.key = std::string(key.begin(), key.end());
  if (value) {
    const Bytes v = EncodeOffsetCommitValue(*value);
    r.value = std::string(v.begin(), v.end());
  }
  return r;
}

PreparedOffsets PrepareOffsets(
    const std::string& group, const std::vector<OffsetCommitArgs::Partition>& partitions,
    int32_t metadata_max_bytes,
    const std::function<void(const OffsetCommitArgs::Partition&, CommittedOffset&)>& stamp) {
  PreparedOffsets out;
  out.errors.assign(partitions.size(), ErrorCode::kNone);
  for (size_t i = 0; i < partitions.size(); ++i) {
    const OffsetCommitArgs::Partition& p = partitions[i];
    std::string metadata = p.metadata.value_or("");
    if (int64_t(metadata.size()) > metadata_max_bytes) {
      out.errors[i] = ErrorCode::kOffsetMetadataTooLarge;
      continue;
    }
    CommittedOffset c;
    c.offset = p.offset;
    c.leader_epoch = p.leader_epoch;
    c.metadata = std::move(metadata);
    stamp(p, c);
    OffsetCommitValue v{c.offset, c.leader_epoch, c.metadata, c.commit_timestamp,
                        c.expire_timestamp};
    out.records.push_back(OffsetRecord(group, p.topic, p.partition, v));
    out.accepted.emplace_back(i, std::move(c));
  }
  return out;
}

RecordInput GroupRecord(const std::string& group, const std::optional<GroupMetadataValue>& value) {
  RecordInput r;
  const Bytes key = EncodeGroupMetadataKey({group});
  r.key = std::string(key.begin(), key.end());
  if (value) {
    const Bytes v = EncodeGroupMetadataValue(*value);
    r.value = std::string(v.begin(), v.end());
  }
  return r;
}

// A storage failure moves the coordinator (NOT_COORDINATOR, the client looks
// it up again), an oversized batch is INVALID_COMMIT_OFFSET_SIZE, the log's
// producer checks (transactional batches only) answer as they would a
// produce, anything else is unknown.
ErrorCode CommitErrorFor(const Status& status) {
  if (std::optional<ProducerAppendError> rejection = ProducerAppendErrorOf(status)) {
    return ErrorCodeForProducerAppend(*rejection);
  }
  switch (status.code()) {
    case StatusCode::kIoError:
    case StatusCode::kNotFound:
      return ErrorCode::kNotCoordinator;
    case StatusCode::kTooLarge:
      return ErrorCode::kInvalidCommitOffsetSize;
    default:
      return ErrorCode::kUnknownServerError;
  }
}

}  // namespace group_internal

using group_internal::AsBytes;
using group_internal::CommitErrorFor;
using group_internal::GroupRecord;
using group_internal::OffsetRecord;
using group_internal::PreparedOffsets;
using group_internal::PrepareOffsets;

namespace {

constexpr size_t kMaxReportedSkips = 20;

}  // namespace

Status GroupCoordinator::StoreGroup(GroupMetadata& group) {
  return storage_
      ->Append(PartitionFor(group.id()),
               {GroupRecord(group.id(), group.ToRecordValue(clock_->NowMs()))}, std::nullopt)
      .status();
}

std::vector<ErrorCode> GroupCoordinator::CommitOffsets(const OffsetCommitArgs& args) {
  Locked locked(*this);
  auto all = [&](ErrorCode e) { return std::vector<ErrorCode>(args.partitions.size(), e); };
  if (ErrorCode e = AvailabilityLocked(args.group_id); e != ErrorCode::kNone) return all(e);
  if (args.group_id.empty()) return all(ErrorCode::kInvalidGroupId);
  GroupMetadata* group = FindGroup(args.group_id);
  if (group == nullptr) {
    // Only a simple commit (no generation) creates a group: Kafka's
    // consumers with assign() and no subscription commit this way.
    if (args.generation_id >= 0) return all(ErrorCode::kIllegalGeneration);
    group = &CreateGroupLocked(args.group_id);
  }
  // Kafka's validateOffsetCommit.
  if (group->Is(GroupState::kDead)) return all(ErrorCode::kCoordinatorNotAvailable);
  if (args.generation_id >= 0 || !args.member_id.empty() || args.group_instance_id) {
    if (ErrorCode e = CheckMember(*group, args.member_id, args.group_instance_id);
        e != ErrorCode::kNone) {
      return all(e);
    }
    if (args.generation_id != group->generation_id()) return all(ErrorCode::kIllegalGeneration);
  } else if (!group->Is(GroupState::kEmpty)) {
    // A group with members takes commits only from its members.
    return all(ErrorCode::kUnknownMemberId);
  }
  if (group->Is(GroupState::kCompletingRebalance)) return all(ErrorCode::kRebalanceInProgress);
  if (MemberMetadata* m = group->FindMember(args.member_id)) ScheduleHeartbeat(*group, *m);

  const int64_t now = clock_->NowMs();
  PreparedOffsets prepared = PrepareOffsets(
      args.group_id, args.partitions, config_.offset_metadata_max_bytes,
      [&](const OffsetCommitArgs::Partition& p, CommittedOffset& c) {
        c.commit_timestamp = p.commit_timestamp >= 0 ? p.commit_timestamp : now;
        c.expire_timestamp =
            args.retention_time_ms >= 0 ? c.commit_timestamp + args.retention_time_ms : -1;
      });
  std::vector<ErrorCode>& errors = prepared.errors;
  const std::vector<RecordInput>& records = prepared.records;
  std::vector<std::pair<size_t, CommittedOffset>>& accepted = prepared.accepted;
  if (records.empty()) return errors;
  // Appended while the lock is held, so the log order of a group's commits
  // is the order they are applied in memory (and replayed by Load).
  Result<int64_t> stored = storage_->Append(PartitionFor(args.group_id), records, std::nullopt);
  for (size_t k = 0; k < accepted.size(); ++k) {
    auto& [i, c] = accepted[k];
    if (!stored.ok()) {
      errors[i] = CommitErrorFor(stored.status());
      continue;
    }
    const OffsetCommitArgs::Partition& p = args.partitions[i];
    c.record_offset = *stored + int64_t(k);
    group->offsets()[{p.topic, p.partition}] = std::move(c);
  }
  return errors;
}

OffsetFetchResult GroupCoordinator::FetchOffsets(
    const std::string& group_id,
    const std::optional<std::vector<std::pair<std::string, int32_t>>>& partitions,
    bool require_stable) {
  std::lock_guard<std::mutex> lock(mu_);
  OffsetFetchResult result;
  if (ErrorCode e = AvailabilityLocked(group_id); e != ErrorCode::kNone) {
    result.error = e;
    return result;
  }
  GroupMetadata* group = FindGroup(group_id);
  auto add = [&](const std::string& topic, int32_t partition, const CommittedOffset* c) {
    OffsetFetchResult::Partition p;
    p.topic = topic;
    p.partition = partition;
    if (require_stable && group != nullptr && group->HasPendingTxnOffset({topic, partition})) {
      // KIP-447: the client retries until the transaction has ended, rather
      // than resume from an offset the transaction is about to replace.
      p.error = ErrorCode::kUnstableOffsetCommit;
    } else if (c != nullptr) {
      p.offset = c->offset;
      p.leader_epoch = c->leader_epoch;
      p.metadata = c->metadata;
    }
    result.partitions.push_back(std::move(p));
  };
  if (!partitions) {
    if (group != nullptr) {
      for (const auto& [tp, c] : group->offsets()) add(tp.first, tp.second, &c);
    }
    return result;
  }
  for (const auto& [topic, partition] : *partitions) {
    const CommittedOffset* c = nullptr;
    if (group != nullptr) {
      auto it = group->offsets().find({topic, partition});
      if (it != group->offsets().end()) c = &it->second;
    }
    add(topic, partition, c);
  }
  return result;
}

GroupDescription GroupCoordinator::DescribeGroup(const std::string& group_id) {
  std::lock_guard<std::mutex> lock(mu_);
  GroupDescription d;
  d.group_id = group_id;
  if (ErrorCode e = AvailabilityLocked(group_id); e != ErrorCode::kNone) {
    d.error = e;
    return d;
  }
  GroupMetadata* group = FindGroup(group_id);
  if (group == nullptr) {
    // Kafka (classic, DescribeGroups v0-5) describes an unknown group as
    // Dead without an error.
    d.state = GroupStateName(GroupState::kDead);
    return d;
  }
  d.state = GroupStateName(group->state());
  d.protocol_type = group->protocol_type().value_or("");
  const bool stable = group->Is(GroupState::kStable);
  if (stable) d.protocol_data = group->protocol_name().value_or("");
  for (const auto& [id, m] : group->members()) {
    GroupDescription::Member member;
    member.member_id = id;
    member.group_instance_id = m.group_instance_id;
    member.client_id = m.client_id;
    member.client_host = m.client_host;
    if (stable && group->protocol_name()) {
      if (const Bytes* meta = m.MetadataFor(*group->protocol_name())) member.metadata = *meta;
      member.assignment = m.assignment;
    }
    d.members.push_back(std::move(member));
  }
  return d;
}

std::pair<ErrorCode, std::vector<GroupListing>> GroupCoordinator::ListGroups(
    const std::vector<std::string>& states) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<GroupListing> out;
  if (!loaded_) return {ErrorCode::kCoordinatorLoadInProgress, out};
  std::vector<GroupState> wanted;
  for (const std::string& s : states) {
    if (std::optional<GroupState> st = ParseGroupState(s)) wanted.push_back(*st);
  }
  // An unknown state name matches no group (Kafka's behaviour).
  const bool filter = !states.empty();
  for (const auto& [id, group] : groups_) {
    if (filter && std::find(wanted.begin(), wanted.end(), group->state()) == wanted.end()) continue;
    out.push_back({id, group->protocol_type().value_or(""), GroupStateName(group->state())});
  }
  return {ErrorCode::kNone, out};
}

void GroupCoordinator::RemoveGroupLocked(const std::string& group_id) {
  groups_.erase(group_id);
}

ErrorCode GroupCoordinator::DeleteGroup(const std::string& group_id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (ErrorCode e = AvailabilityLocked(group_id); e != ErrorCode::kNone) return e;
  if (group_id.empty()) return ErrorCode::kInvalidGroupId;
  GroupMetadata* group = FindGroup(group_id);
  if (group == nullptr || group->Is(GroupState::kDead)) return ErrorCode::kGroupIdNotFound;
  if (!group->Is(GroupState::kEmpty)) return ErrorCode::kNonEmptyGroup;
  // Kafka 4.0's deleteAllOffsets: the committed offsets and those only open
  // transactions hold, whose tombstones also drop them from the transactions
  // (so a later COMMIT marker brings none of them back, at runtime or on load).
  std::set<std::pair<std::string, int32_t>> partitions;
  for (const auto& [tp, c] : group->offsets()) partitions.insert(tp);
  for (const auto& [producer_id, pending] : group->pending_txn_offsets()) {
    for (const auto& [tp, c] : pending) partitions.insert(tp);
  }
  std::vector<RecordInput> tombstones;
  for (const auto& tp : partitions) {
    tombstones.push_back(OffsetRecord(group_id, tp.first, tp.second, std::nullopt));
  }
  tombstones.push_back(GroupRecord(group_id, std::nullopt));
  if (Result<int64_t> s = storage_->Append(PartitionFor(group_id), tombstones, std::nullopt);
      !s.ok()) {
    return CommitErrorFor(s.status());
  }
  group->TransitionTo(GroupState::kDead, clock_->NowMs());
  RemoveGroupLocked(group_id);
  return ErrorCode::kNone;
}

std::pair<ErrorCode, std::vector<ErrorCode>> GroupCoordinator::DeleteOffsets(
    const std::string& group_id, const std::vector<std::pair<std::string, int32_t>>& partitions) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<ErrorCode> errors(partitions.size(), ErrorCode::kNone);
  if (ErrorCode e = AvailabilityLocked(group_id); e != ErrorCode::kNone) return {e, {}};
  GroupMetadata* group = FindGroup(group_id);
  if (group == nullptr || group->Is(GroupState::kDead)) return {ErrorCode::kGroupIdNotFound, {}};
  // Kafka's handleDeleteOffsets: a consumer group keeps the offsets of the
  // topics its members subscribe to; any other non-empty group keeps all.
  std::set<std::string> subscribed;
  if (group->protocol_type() && *group->protocol_type() == "consumer") {
    if (!group->Is(GroupState::kEmpty)) subscribed = group->SubscribedTopics();
  } else if (!group->Is(GroupState::kEmpty)) {
    return {ErrorCode::kNonEmptyGroup, {}};
  }
  std::vector<RecordInput> tombstones;
  std::vector<std::pair<std::string, int32_t>> removed;
  for (size_t i = 0; i < partitions.size(); ++i) {
    const auto& [topic, partition] = partitions[i];
    if (subscribed.count(topic)) {
      errors[i] = ErrorCode::kGroupSubscribedToTopic;
      continue;
    }
    // Kafka 4.0: a partition only an open transaction holds an offset for
    // gets its tombstone too, which drops it from the transaction.
    if (group->offsets().count({topic, partition}) ||
        group->HasPendingTxnOffset({topic, partition})) {
      tombstones.push_back(OffsetRecord(group_id, topic, partition, std::nullopt));
      removed.emplace_back(topic, partition);
    }
  }
  if (!tombstones.empty()) {
    if (Result<int64_t> s = storage_->Append(PartitionFor(group_id), tombstones, std::nullopt);
        !s.ok()) {
      return {CommitErrorFor(s.status()), {}};
    }
    for (const auto& tp : removed) group->RemoveOffset(tp);
  }
  return {ErrorCode::kNone, errors};
}

// Kafka's removeExpiredOffsets (offsets.retention.minutes, KIP-211): an
// offset with an explicit expire timestamp expires then; in an empty group
// every offset expires a retention period after the group became empty; in
// a consumer group with members, offsets of topics no member subscribes to
// expire a retention period after their commit. An empty group left without
// offsets is removed (its tombstone written). Kafka 4.0's
// cleanupExpiredOffsets: an offset an open transaction is about to replace
// does not expire, and a group with an open transaction is not removed.
void GroupCoordinator::ExpireOffsetsLocked() {
  const int64_t now = clock_->NowMs();
  std::vector<std::string> emptied;
  for (auto& [id, group] : groups_) {
    std::set<std::string> subscribed;
    const bool consumer_with_members = !group->Is(GroupState::kEmpty) && group->protocol_type() &&
                                       *group->protocol_type() == "consumer";
    if (consumer_with_members) subscribed = group->SubscribedTopics();
    if (!group->Is(GroupState::kEmpty) && !consumer_with_members) continue;
    std::vector<RecordInput> tombstones;
    std::vector<std::pair<std::string, int32_t>> expired;
    for (const auto& [tp, c] : group->offsets()) {
      if (group->HasPendingTxnOffset(tp)) continue;
      bool expire = false;
      if (c.expire_timestamp >= 0) {
        expire = now >= c.expire_timestamp;
      } else if (group->Is(GroupState::kEmpty)) {
        expire = now - std::max(group->state_timestamp(), c.commit_timestamp) >=
                 config_.offsets_retention_ms;
      } else if (!subscribed.count(tp.first)) {
        expire = now - c.commit_timestamp >= config_.offsets_retention_ms;
      }
      if (expire) {
        tombstones.push_back(OffsetRecord(id, tp.first, tp.second, std::nullopt));
        expired.push_back(tp);
      }
    }
    const bool remove_group = group->Is(GroupState::kEmpty) && group->members().empty() &&
                              expired.size() == group->offsets().size() &&
                              group->pending_members().empty() &&
                              group->pending_txn_offsets().empty();
    if (remove_group) tombstones.push_back(GroupRecord(id, std::nullopt));
    if (tombstones.empty()) continue;
    // A failed append leaves the offsets for the next check.
    if (!storage_->Append(PartitionFor(id), tombstones, std::nullopt).ok()) continue;
    for (const auto& tp : expired) group->RemoveOffset(tp);
    if (remove_group) emptied.push_back(id);
  }
  for (const std::string& id : emptied) RemoveGroupLocked(id);
}

Status GroupCoordinator::OnTopicDeleted(const std::string& topic) {
  Locked locked(*this);
  if (shut_down_) return Status::Ok();
  if (!loaded_) {
    early_deleted_topics_.push_back(topic);
    return Status::Ok();
  }
  return RemoveTopicOffsetsLocked(topic);
}

Status GroupCoordinator::RemoveTopicOffsetsLocked(const std::string& topic) {
  Status first_error;
  for (auto& [id, group] : groups_) {
    std::set<std::pair<std::string, int32_t>> partitions;
    for (const auto& [tp, c] : group->offsets()) {
      if (tp.first == topic) partitions.insert(tp);
    }
    for (const auto& [producer_id, pending] : group->pending_txn_offsets()) {
      for (const auto& [tp, c] : pending) {
        if (tp.first == topic) partitions.insert(tp);
      }
    }
    if (partitions.empty()) continue;
    std::vector<RecordInput> tombstones;
    for (const auto& [t, partition] : partitions) {
      tombstones.push_back(OffsetRecord(id, t, partition, std::nullopt));
    }
    Result<int64_t> appended = storage_->Append(PartitionFor(id), tombstones, std::nullopt);
    if (!appended.ok() && first_error.ok()) {
      first_error = appended.status().WithContext(
          fmt::format("group {}: tombstones for the offsets of deleted topic {}", id, topic));
    }
    for (const auto& tp : partitions) group->RemoveOffset(tp);
  }
  return first_error;
}

Result<GroupLoadReport> GroupCoordinator::Load() {
  GroupLoadReport report;
  const int64_t now = clock_->NowMs();
  std::map<std::string, group_internal::OffsetsReplay::Group> all_loaded;
  auto skip = [&](int32_t partition, int64_t offset, const std::string& why) {
    ++report.skipped;
    if (report.skipped_reasons.size() < kMaxReportedSkips) {
      report.skipped_reasons.push_back(
          fmt::format("__consumer_offsets-{} offset {}: {}", partition, offset, why));
    }
  };
  std::set<int32_t> failed;
  for (int32_t partition = 0; partition < config_.offsets_partitions; ++partition) {
    // What this partition's records say; merged only if all of it was read
    // (every group lives in one partition).
    group_internal::OffsetsReplay replay(now);
    Status read = storage_->ReadBatches(partition, [&](const RecordBatchView& batch) -> Status {
      if (batch.magic() != 2) {
        skip(partition, batch.base_offset(), "a legacy (magic 0/1) message is not replayed");
        return Status::Ok();
      }
      // Below the recovery point nothing re-checked these bytes since they
      // were written; a damaged batch is skipped, not trusted.
      if (!batch.crc_valid()) {
        skip(partition, batch.base_offset(), "batch CRC mismatch");
        return Status::Ok();
      }
      Result<std::vector<Record>> records = batch.DecodeRecords();
      if (!records.ok()) {
        skip(partition, batch.base_offset(), records.status().ToString());
        return Status::Ok();
      }
      if (batch.is_control()) {
        // A marker batch holds one record (Kafka reads only the first); an
        // empty one is what the cleaner leaves of a finished transaction.
        if (records->empty() || !records->front().key) return Status::Ok();
        Result<ControlRecordType> type = ParseControlRecordKey(AsBytes(records->front().key));
        if (type.ok() &&
            (*type == ControlRecordType::kCommit || *type == ControlRecordType::kAbort)) {
          replay.Marker(batch.producer_id(), *type == ControlRecordType::kCommit);
        }
        return Status::Ok();
      }
      const std::optional<int64_t> producer =
          batch.is_transactional() ? std::optional<int64_t>(batch.producer_id()) : std::nullopt;
      for (const Record& r : *records) {
        ++report.records;
        if (!r.key) {
          skip(partition, r.offset, "a record without a key");
          continue;
        }
        Result<OffsetsRecordKey> key = DecodeOffsetsRecordKey(AsBytes(r.key));
        if (!key.ok()) {
          skip(partition, r.offset, key.status().ToString());
          continue;
        }
        if (const auto* k = std::get_if<OffsetCommitKey>(&*key)) {
          std::optional<OffsetCommitValue> value;
          if (r.value) {
            Result<OffsetCommitValue> v = DecodeOffsetCommitValue(AsBytes(r.value));
            if (!v.ok()) {
              skip(partition, r.offset, v.status().ToString());
              continue;
            }
            value = *v;
          }
          replay.Offset(*k, value, r.offset, producer);
        } else if (const auto* k = std::get_if<GroupMetadataKey>(&*key)) {
          if (!r.value) {
            replay.Metadata(k->group, std::nullopt);
            continue;
          }
          Result<GroupMetadataValue> v = DecodeGroupMetadataValue(AsBytes(r.value));
          if (!v.ok()) {
            skip(partition, r.offset, v.status().ToString());
            continue;
          }
          replay.Metadata(k->group, std::move(*v));
        }
        // Other keys (KIP-848 and share groups) are not this coordinator's.
      }
      return Status::Ok();
    });
    if (!read.ok()) {
      // One unreadable partition does not take the others' groups down: its
      // groups answer COORDINATOR_NOT_AVAILABLE (retriable) until a restart
      // reads it, rather than being served without their offsets.
      failed.insert(partition);
      report.failed_partitions.push_back(
          fmt::format("__consumer_offsets-{}: {}", partition, read.ToString()));
      continue;
    }
    for (auto& [id, g] : replay.groups()) all_loaded.insert_or_assign(id, std::move(g));
  }
  Locked locked(*this);
  groups_.clear();
  txn_groups_.clear();
  failed_partitions_ = std::move(failed);
  for (auto& [id, g] : all_loaded) {
    // Deleted, unless an open transaction still holds offsets of it (Kafka
    // creates the group for them).
    if (!g.metadata && g.offsets.offsets().empty() && g.offsets.pending_txn_offsets().empty()) {
      continue;
    }
    auto group = std::make_shared<GroupMetadata>(std::move(g.offsets));
    if (g.metadata) group->LoadFrom(*g.metadata, now);
    report.offsets += int64_t(group->offsets().size());
    // Counted as the log left them, before the early completions below.
    for (const auto& [producer_id, pending] : group->pending_txn_offsets()) {
      txn_groups_[producer_id].insert(id);
      ++report.open_transactions;
    }
    groups_.emplace(id, std::move(group));
  }
  // Loaded members' sessions start now; those that do not come back expire.
  for (auto& [id, group] : groups_) {
    for (auto& [member_id, member] : group->members()) ScheduleHeartbeat(*group, member);
  }
  report.groups = int64_t(groups_.size());
  loaded_ = true;
  // Markers written while the partitions were read: applying one whose
  // marker Load already replayed finds nothing pending.
  for (const TxnCompletion& c : early_completions_) {
    CompleteTransactionLocked(c.producer_id, c.offsets_partition, c.commit);
  }
  early_completions_.clear();
  // A failed tombstone append is an I/O error of __consumer_offsets, which
  // its log dir's failure path reports; the offsets are gone from memory.
  for (const std::string& topic : early_deleted_topics_) (void)RemoveTopicOffsetsLocked(topic);
  early_deleted_topics_.clear();
  scheduler_->SchedulePeriodic("group-offsets-retention", config_.retention_check_interval_ms,
                               config_.retention_check_interval_ms,
                               [anchor = std::weak_ptr<JobAnchor>(anchor_)] {
                                 std::shared_ptr<JobAnchor> a = anchor.lock();
                                 if (a == nullptr) return;
                                 std::lock_guard<std::mutex> lock(a->mu);
                                 if (a->coordinator != nullptr) a->coordinator->ExpireOffsets();
                               });
  return report;
}

void GroupCoordinator::ExpireOffsets() {
  Locked locked(*this);
  if (loaded_) ExpireOffsetsLocked();
}

}  // namespace daruma
