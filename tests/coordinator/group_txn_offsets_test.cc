// Transactional offset commits (TxnOffsetCommit, KIP-98 / KIP-447) on real
// `__consumer_offsets` logs: the batch as Kafka writes it (producer id and
// epoch, base sequence 0, transactional) holding the partition's LSO until
// the transaction coordinator's marker; offsets invisible until
// CompleteTransaction, UNSTABLE_OFFSET_COMMIT for require_stable meanwhile;
// COMMIT applies them only over offsets written earlier, ABORT drops them;
// Load replays batches and markers the same way, and a crash between the
// batch and the marker leaves them pending; validation, fencing, retention,
// deletion and a marker written while Load reads.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "coordinator/group_test_support.h"
#include "record/record_batch_builder.h"

namespace daruma::testing {
namespace {

constexpr char kTxnGroup[] = "txn-app";
constexpr int64_t kPid = 4000;
constexpr int16_t kEpoch = 3;

OffsetCommitArgs::Partition P(const std::string& topic, int32_t partition, int64_t offset,
                              std::optional<std::string> metadata = std::nullopt) {
  return {topic, partition, offset, -1, std::move(metadata), -1};
}

struct BatchFacts {
  int64_t base_offset = -1;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  bool transactional = false;
  bool control = false;
  int32_t records = 0;
};

class GroupTxnOffsetsTest : public ::testing::Test {
 protected:
  GroupCoordinator& coordinator() { return h_.coordinator(); }
  int32_t PartitionOf(const std::string& group) { return h_.PartitionFor(group); }

  std::vector<ErrorCode> CommitTxn(std::vector<OffsetCommitArgs::Partition> partitions,
                                   int64_t pid = kPid, int16_t epoch = kEpoch,
                                   const std::string& group = kTxnGroup) {
    TxnOffsetCommitArgs a;
    a.transactional_id = "tx-" + std::to_string(pid);
    a.group_id = group;
    a.producer_id = pid;
    a.producer_epoch = epoch;
    a.partitions = std::move(partitions);
    return coordinator().CommitTransactionalOffsets(a);
  }

  void CommitPlain(const std::string& topic, int32_t partition, int64_t offset,
                   const std::string& group = kTxnGroup) {
    OffsetCommitArgs a;
    a.group_id = group;
    a.partitions.push_back(P(topic, partition, offset));
    ASSERT_EQ(coordinator().CommitOffsets(a), std::vector<ErrorCode>{ErrorCode::kNone});
  }

  // What the transaction coordinator does on this node: the marker appended
  // to the group's partition, as a coordinator append.
  void WriteMarker(bool commit, int64_t pid = kPid, int16_t epoch = kEpoch,
                   const std::string& group = kTxnGroup) {
    Log* log = h_.log(PartitionOf(group));
    ASSERT_NE(log, nullptr);
    const Bytes marker = BuildEndTxnMarkerBatch(
        0, 0, pid, epoch, commit ? ControlRecordType::kCommit : ControlRecordType::kAbort,
        /*coordinator_epoch=*/1, h_.time().clock.NowMs());
    Result<LogAppendInfo> info = log->AppendAsLeader(marker, 0, AppendOrigin::kCoordinator);
    ASSERT_TRUE(info.ok()) << info.status().ToString();
    log->UpdateHighWatermark(log->log_end_offset());
  }

  void EndTxn(bool commit, int64_t pid = kPid, int16_t epoch = kEpoch,
              const std::string& group = kTxnGroup) {
    WriteMarker(commit, pid, epoch, group);
    coordinator().CompleteTransaction(pid, PartitionOf(group), commit);
  }

  OffsetFetchResult::Partition Fetch(const std::string& topic, int32_t partition,
                                     bool require_stable = false,
                                     const std::string& group = kTxnGroup) {
    OffsetFetchResult r = coordinator().FetchOffsets(
        group, std::vector<std::pair<std::string, int32_t>>{{topic, partition}}, require_stable);
    EXPECT_EQ(r.error, ErrorCode::kNone);
    EXPECT_EQ(r.partitions.size(), 1u);
    return r.partitions.empty() ? OffsetFetchResult::Partition{} : r.partitions[0];
  }
  int64_t Offset(const std::string& topic, int32_t partition,
                 const std::string& group = kTxnGroup) {
    return Fetch(topic, partition, false, group).offset;
  }

  std::vector<BatchFacts> Batches(const std::string& group = kTxnGroup) {
    LogGroupStorage reader(
        OffsetsLogFor(&h_.manager(), 3, LogConfig{}, OffsetsTopicOverrides(104857600)),
        &h_.time().clock);
    std::vector<BatchFacts> out;
    Status s = reader.ReadBatches(PartitionOf(group), [&](const RecordBatchView& b) {
      out.push_back({b.base_offset(), b.producer_id(), b.producer_epoch(), b.base_sequence(),
                     b.is_transactional(), b.is_control(), b.records_count()});
      return Status::Ok();
    });
    EXPECT_TRUE(s.ok()) << s.ToString();
    return out;
  }

  OffsetsLogHarness h_;
};

TEST_F(GroupTxnOffsetsTest, ACommittedTransactionMakesItsOffsetsVisible) {
  EXPECT_EQ(CommitTxn({P("clicks", 0, 10), P("clicks", 1, 11)}),
            (std::vector<ErrorCode>{ErrorCode::kNone, ErrorCode::kNone}));
  EXPECT_EQ(Offset("clicks", 0), -1);
  EXPECT_EQ(Offset("clicks", 1), -1);

  // One batch, as Kafka's coordinator writes it.
  std::vector<BatchFacts> batches = Batches();
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0].producer_id, kPid);
  EXPECT_EQ(batches[0].producer_epoch, kEpoch);
  EXPECT_EQ(batches[0].base_sequence, 0);
  EXPECT_TRUE(batches[0].transactional);
  EXPECT_FALSE(batches[0].control);
  EXPECT_EQ(batches[0].records, 2);
  // The log tracks it as the producer's open transaction: the LSO waits.
  Log* log = h_.log(PartitionOf(kTxnGroup));
  EXPECT_EQ(log->first_unstable_offset(), std::optional<int64_t>(batches[0].base_offset));
  EXPECT_EQ(log->last_stable_offset(), batches[0].base_offset);

  EndTxn(true);
  EXPECT_EQ(log->first_unstable_offset(), std::nullopt);
  EXPECT_EQ(log->last_stable_offset(), log->log_end_offset());
  EXPECT_EQ(Offset("clicks", 0), 10);
  EXPECT_EQ(Offset("clicks", 1), 11);

  h_.Restart();
  EXPECT_EQ(h_.load_report().open_transactions, 0);
  EXPECT_EQ(Offset("clicks", 0), 10);
  EXPECT_EQ(Offset("clicks", 1), 11);
}

TEST_F(GroupTxnOffsetsTest, AnAbortedTransactionLeavesTheCommittedOffset) {
  CommitPlain("clicks", 0, 5);
  ASSERT_EQ(CommitTxn({P("clicks", 0, 10)}), std::vector<ErrorCode>{ErrorCode::kNone});
  EXPECT_EQ(Offset("clicks", 0), 5);
  EndTxn(false);
  EXPECT_EQ(Offset("clicks", 0), 5);
  EXPECT_EQ(h_.log(PartitionOf(kTxnGroup))->first_unstable_offset(), std::nullopt);
  h_.Restart();
  EXPECT_EQ(Offset("clicks", 0), 5);
}

TEST_F(GroupTxnOffsetsTest, RequireStableAnswersUnstableWhileATransactionHoldsAnOffset) {
  CommitPlain("clicks", 0, 5);
  CommitPlain("clicks", 1, 6);
  ASSERT_EQ(CommitTxn({P("clicks", 0, 10), P("clicks", 2, 12)}),
            (std::vector<ErrorCode>{ErrorCode::kNone, ErrorCode::kNone}));

  OffsetFetchResult::Partition unstable = Fetch("clicks", 0, /*require_stable=*/true);
  EXPECT_EQ(unstable.error, ErrorCode::kUnstableOffsetCommit);
  EXPECT_EQ(unstable.offset, -1);
  EXPECT_EQ(unstable.leader_epoch, -1);
  EXPECT_EQ(unstable.metadata, "");
  // A partition with only a pending offset is unstable too.
  EXPECT_EQ(Fetch("clicks", 2, true).error, ErrorCode::kUnstableOffsetCommit);
  OffsetFetchResult::Partition stable = Fetch("clicks", 1, true);
  EXPECT_EQ(stable.error, ErrorCode::kNone);
  EXPECT_EQ(stable.offset, 6);
  // Without the flag the pending offsets are simply not seen.
  EXPECT_EQ(Fetch("clicks", 0).error, ErrorCode::kNone);
  EXPECT_EQ(Offset("clicks", 0), 5);
  EXPECT_EQ(Offset("clicks", 2), -1);

  // Every committed offset: the one a transaction holds is unstable.
  OffsetFetchResult all = coordinator().FetchOffsets(kTxnGroup, std::nullopt, true);
  ASSERT_EQ(all.partitions.size(), 2u);
  EXPECT_EQ(all.partitions[0].partition, 0);
  EXPECT_EQ(all.partitions[0].error, ErrorCode::kUnstableOffsetCommit);
  EXPECT_EQ(all.partitions[1].offset, 6);
  EXPECT_EQ(all.partitions[1].error, ErrorCode::kNone);

  EndTxn(true);
  EXPECT_EQ(Fetch("clicks", 0, true).error, ErrorCode::kNone);
  EXPECT_EQ(Fetch("clicks", 0, true).offset, 10);
  EXPECT_EQ(Fetch("clicks", 2, true).offset, 12);
}

TEST_F(GroupTxnOffsetsTest, ACrashBeforeTheMarkerLeavesTheOffsetsPending) {
  CommitPlain("clicks", 0, 5);
  ASSERT_EQ(CommitTxn({P("clicks", 0, 10)}), std::vector<ErrorCode>{ErrorCode::kNone});
  h_.Crash();
  EXPECT_EQ(h_.load_report().open_transactions, 1);
  EXPECT_EQ(Offset("clicks", 0), 5);
  EXPECT_EQ(Fetch("clicks", 0, true).error, ErrorCode::kUnstableOffsetCommit);
  // Recovery rebuilt the producer's open transaction from the log.
  Log* log = h_.log(PartitionOf(kTxnGroup));
  ASSERT_TRUE(log->first_unstable_offset().has_value());

  EndTxn(true);
  EXPECT_EQ(log->first_unstable_offset(), std::nullopt);
  EXPECT_EQ(Offset("clicks", 0), 10);
  h_.Crash();
  EXPECT_EQ(Offset("clicks", 0), 10);
}

TEST_F(GroupTxnOffsetsTest, ACommitMarkerInTheLogIsReplayed) {
  CommitPlain("clicks", 0, 5);
  ASSERT_EQ(CommitTxn({P("clicks", 0, 10)}), std::vector<ErrorCode>{ErrorCode::kNone});
  // The marker is written, the coordinator is never told: a crash in between.
  WriteMarker(true);
  EXPECT_EQ(Offset("clicks", 0), 5);
  h_.Crash();
  EXPECT_EQ(h_.load_report().open_transactions, 0);
  EXPECT_EQ(Offset("clicks", 0), 10);
  EXPECT_EQ(Fetch("clicks", 0, true).error, ErrorCode::kNone);
}

TEST_F(GroupTxnOffsetsTest, AnAbortMarkerInTheLogIsReplayed) {
  CommitPlain("clicks", 0, 5);
  ASSERT_EQ(CommitTxn({P("clicks", 0, 10), P("clicks", 1, 11)}),
            (std::vector<ErrorCode>{ErrorCode::kNone, ErrorCode::kNone}));
  WriteMarker(false);
  h_.Crash();
  EXPECT_EQ(h_.load_report().open_transactions, 0);
  EXPECT_EQ(Offset("clicks", 0), 5);
  EXPECT_EQ(Offset("clicks", 1), -1);
  EXPECT_EQ(Fetch("clicks", 1, true).error, ErrorCode::kNone);
}

TEST_F(GroupTxnOffsetsTest, APendingOffsetReplacesOnlyOffsetsWrittenBeforeIt) {
  // Pending 10, then a plain commit of 20: the COMMIT keeps 20.
  ASSERT_EQ(CommitTxn({P("clicks", 0, 10)}), std::vector<ErrorCode>{ErrorCode::kNone});
  CommitPlain("clicks", 0, 20);
  EndTxn(true);
  EXPECT_EQ(Offset("clicks", 0), 20);
  h_.Restart();
  EXPECT_EQ(Offset("clicks", 0), 20);

  // Written after the plain commit, it replaces it.
  ASSERT_EQ(CommitTxn({P("clicks", 0, 30)}), std::vector<ErrorCode>{ErrorCode::kNone});
  EndTxn(true);
  EXPECT_EQ(Offset("clicks", 0), 30);

  // Two producers: the later-written offset wins whichever commits last.
  ASSERT_EQ(CommitTxn({P("clicks", 0, 40)}, 7001, 0), std::vector<ErrorCode>{ErrorCode::kNone});
  ASSERT_EQ(CommitTxn({P("clicks", 0, 50)}, 7002, 0), std::vector<ErrorCode>{ErrorCode::kNone});
  EndTxn(true, 7002, 0);
  EXPECT_EQ(Offset("clicks", 0), 50);
  EndTxn(true, 7001, 0);
  EXPECT_EQ(Offset("clicks", 0), 50);
  h_.Crash();
  EXPECT_EQ(Offset("clicks", 0), 50);
}

TEST_F(GroupTxnOffsetsTest, ValidationAndFencingFollowKafka) {
  // No such group: only a commit without a generation creates one.
  TxnOffsetCommitArgs a;
  a.group_id = "nobody";
  a.producer_id = kPid;
  a.producer_epoch = kEpoch;
  a.generation_id = 1;
  a.member_id = "m";
  a.partitions = {P("clicks", 0, 1)};
  EXPECT_EQ(coordinator().CommitTransactionalOffsets(a),
            std::vector<ErrorCode>{ErrorCode::kIllegalGeneration});
  EXPECT_EQ(coordinator().DescribeGroup("nobody").state, "Dead");

  a.group_id = "";
  a.generation_id = -1;
  a.member_id = "";
  EXPECT_EQ(coordinator().CommitTransactionalOffsets(a),
            std::vector<ErrorCode>{ErrorCode::kInvalidGroupId});
  a.group_id = kTxnGroup;
  a.producer_id = -1;
  EXPECT_EQ(coordinator().CommitTransactionalOffsets(a),
            std::vector<ErrorCode>{ErrorCode::kInvalidProducerIdMapping});

  // A group with a member.
  JoinSlot join = JoinAs(coordinator(), kTxnGroup, "");
  CompleteRebalance(coordinator(), h_.time(), kTxnGroup, {join});
  ASSERT_TRUE(join->has_value());
  const std::string member = (*join)->member_id;
  const int32_t generation = (*join)->generation_id;
  ASSERT_EQ(coordinator().DescribeGroup(kTxnGroup).state, "Stable");
  a.producer_id = kPid;
  a.member_id = member;
  a.generation_id = generation;
  EXPECT_EQ(coordinator().CommitTransactionalOffsets(a), std::vector<ErrorCode>{ErrorCode::kNone});
  a.generation_id = generation + 1;
  EXPECT_EQ(coordinator().CommitTransactionalOffsets(a),
            std::vector<ErrorCode>{ErrorCode::kIllegalGeneration});
  a.generation_id = generation;
  a.member_id = "someone-else";
  EXPECT_EQ(coordinator().CommitTransactionalOffsets(a),
            std::vector<ErrorCode>{ErrorCode::kUnknownMemberId});
  // TxnOffsetCommit v0-2 carries no member: a group with members takes it.
  a.member_id = "";
  a.generation_id = -1;
  EXPECT_EQ(coordinator().CommitTransactionalOffsets(a), std::vector<ErrorCode>{ErrorCode::kNone});

  // Oversized metadata fails only its partition.
  a.partitions = {P("clicks", 1, 2, std::string(5000, 'x')), P("clicks", 2, 3, "ok")};
  EXPECT_EQ(coordinator().CommitTransactionalOffsets(a),
            (std::vector<ErrorCode>{ErrorCode::kOffsetMetadataTooLarge, ErrorCode::kNone}));

  // An older epoch of the producer is fenced by the log.
  a.producer_epoch = kEpoch - 1;
  a.partitions = {P("clicks", 0, 4)};
  EXPECT_EQ(coordinator().CommitTransactionalOffsets(a),
            std::vector<ErrorCode>{ErrorCode::kInvalidProducerEpoch});

  EndTxn(true);
  EXPECT_EQ(Offset("clicks", 0), 1);
  EXPECT_EQ(Offset("clicks", 1), -1);
  EXPECT_EQ(Fetch("clicks", 2).metadata, "ok");
}

TEST_F(GroupTxnOffsetsTest, AReplacedStaticMemberIsFenced) {
  const std::string group = "static-app";
  auto join = [&](const std::string& member_id) {
    JoinGroupArgs j;
    j.group_id = group;
    j.member_id = member_id;
    j.group_instance_id = "instance-1";
    j.protocol_type = "consumer";
    j.protocols = {{"range", Bytes(16, 'm')}};
    j.session_timeout_ms = 10000;
    j.rebalance_timeout_ms = 10000;
    j.client_id = "client";
    j.client_host = "/127.0.0.1";
    auto slot = std::make_shared<std::optional<JoinGroupResult>>();
    coordinator().JoinGroup(std::move(j), [slot](JoinGroupResult r) { *slot = std::move(r); });
    return slot;
  };
  JoinSlot first = join("");
  CompleteRebalance(coordinator(), h_.time(), group, {first});
  ASSERT_TRUE(first->has_value());
  // The instance rejoins without its id: a new member id replaces the old one.
  JoinSlot second = join("");
  ASSERT_TRUE(second->has_value());
  ASSERT_NE((*second)->member_id, (*first)->member_id);

  TxnOffsetCommitArgs a;
  a.group_id = group;
  a.producer_id = kPid;
  a.producer_epoch = kEpoch;
  a.member_id = (*first)->member_id;
  a.group_instance_id = "instance-1";
  a.generation_id = (*first)->generation_id;
  a.partitions = {P("clicks", 0, 1)};
  EXPECT_EQ(coordinator().CommitTransactionalOffsets(a),
            std::vector<ErrorCode>{ErrorCode::kFencedInstanceId});
}

TEST_F(GroupTxnOffsetsTest, NothingIsAnsweredBeforeLoad) {
  LogGroupStorage storage(
      OffsetsLogFor(&h_.manager(), 3, LogConfig{}, OffsetsTopicOverrides(104857600)),
      &h_.time().clock);
  GroupCoordinatorConfig config;
  config.offsets_partitions = 3;
  GroupCoordinator unloaded(config, &storage, &h_.time().scheduler);
  TxnOffsetCommitArgs a;
  a.group_id = kTxnGroup;
  a.producer_id = kPid;
  a.producer_epoch = kEpoch;
  a.partitions = {P("clicks", 0, 1), P("clicks", 1, 1)};
  EXPECT_EQ(unloaded.CommitTransactionalOffsets(a),
            std::vector<ErrorCode>(2, ErrorCode::kCoordinatorLoadInProgress));
  EXPECT_EQ(unloaded.FetchOffsets(kTxnGroup, std::nullopt, true).error,
            ErrorCode::kCoordinatorLoadInProgress);
}

// Reads like LogGroupStorage and, right after `partition` was read, runs
// `after_read` once: a marker the transaction coordinator writes then is not
// in what Load replays.
class HookedStorage final : public GroupStorage {
 public:
  HookedStorage(GroupStorage* inner, int32_t partition) : inner_(inner), partition_(partition) {}
  Result<int64_t> Append(int32_t partition, const std::vector<RecordInput>& records,
                         const std::optional<ProducerBatchInfo>& producer) override {
    return inner_->Append(partition, records, producer);
  }
  Status ReadBatches(int32_t partition,
                     const std::function<Status(const RecordBatchView&)>& visit) override {
    Status s = inner_->ReadBatches(partition, visit);
    if (partition == partition_ && after_read) {
      after_read();
      after_read = nullptr;
    }
    return s;
  }
  std::function<void()> after_read;

 private:
  GroupStorage* inner_;
  int32_t partition_;
};

TEST_F(GroupTxnOffsetsTest, AMarkerWrittenWhileLoadReadsIsNotLost) {
  CommitPlain("clicks", 0, 5);
  ASSERT_EQ(CommitTxn({P("clicks", 0, 10)}), std::vector<ErrorCode>{ErrorCode::kNone});

  LogGroupStorage logs(
      OffsetsLogFor(&h_.manager(), 3, LogConfig{}, OffsetsTopicOverrides(104857600)),
      &h_.time().clock);
  HookedStorage hooked(&logs, PartitionOf(kTxnGroup));
  GroupCoordinatorConfig config;
  config.offsets_partitions = 3;
  GroupCoordinator reloaded(config, &hooked, &h_.time().scheduler);
  hooked.after_read = [&] {
    WriteMarker(true);
    reloaded.CompleteTransaction(kPid, PartitionOf(kTxnGroup), true);
  };
  Result<GroupLoadReport> report = reloaded.Load();
  ASSERT_TRUE(report.ok()) << report.status().ToString();
  EXPECT_EQ(report->open_transactions, 1);  // as read, before the marker
  OffsetFetchResult r = reloaded.FetchOffsets(
      kTxnGroup, std::vector<std::pair<std::string, int32_t>>{{"clicks", 0}}, true);
  ASSERT_EQ(r.partitions.size(), 1u);
  EXPECT_EQ(r.partitions[0].error, ErrorCode::kNone);
  EXPECT_EQ(r.partitions[0].offset, 10);
}

TEST_F(GroupTxnOffsetsTest, RetentionWaitsForOpenTransactions) {
  const int64_t retention = GroupCoordinatorConfig{}.offsets_retention_ms;
  const int64_t interval = GroupCoordinatorConfig{}.retention_check_interval_ms;
  CommitPlain("clicks", 0, 5);
  ASSERT_EQ(CommitTxn({P("clicks", 0, 10)}), std::vector<ErrorCode>{ErrorCode::kNone});
  // A second group with nothing but an open transaction.
  const std::string other = "txn-only";
  ASSERT_EQ(CommitTxn({P("views", 0, 7)}, 7001, 0, other),
            std::vector<ErrorCode>{ErrorCode::kNone});
  ASSERT_EQ(coordinator().GroupCount(), 2u);

  h_.time().Advance(retention + interval);
  // The offset a transaction is about to replace does not expire, and
  // neither group, each with an open transaction, is removed.
  EXPECT_EQ(coordinator().GroupCount(), 2u);
  EXPECT_EQ(Offset("clicks", 0), 5);

  EndTxn(false);
  EndTxn(true, 7001, 0, other);
  EXPECT_EQ(Offset("views", 0, other), 7);
  h_.time().Advance(interval);
  // Once the transactions ended both expire (a transaction's offset carries
  // the time of its TxnOffsetCommit, as in Kafka) and the empty groups go.
  EXPECT_EQ(Offset("clicks", 0), -1);
  EXPECT_EQ(Offset("views", 0, other), -1);
  EXPECT_EQ(coordinator().GroupCount(), 0u);
}

TEST_F(GroupTxnOffsetsTest, DeletionDropsPendingOffsets) {
  ASSERT_EQ(CommitTxn({P("clicks", 0, 10), P("clicks", 1, 11)}),
            (std::vector<ErrorCode>{ErrorCode::kNone, ErrorCode::kNone}));
  // OffsetDelete of a partition only the transaction holds an offset for.
  auto [error, errors] = coordinator().DeleteOffsets(kTxnGroup, {{"clicks", 0}});
  EXPECT_EQ(error, ErrorCode::kNone);
  EXPECT_EQ(errors, std::vector<ErrorCode>{ErrorCode::kNone});
  EXPECT_EQ(Fetch("clicks", 0, true).error, ErrorCode::kNone);
  EXPECT_EQ(Fetch("clicks", 1, true).error, ErrorCode::kUnstableOffsetCommit);

  const std::string other = "doomed";
  ASSERT_EQ(CommitTxn({P("views", 0, 7)}, 7001, 0, other),
            std::vector<ErrorCode>{ErrorCode::kNone});
  EXPECT_EQ(coordinator().DeleteGroup(other), ErrorCode::kNone);

  EndTxn(true);
  EndTxn(true, 7001, 0, other);
  EXPECT_EQ(Offset("clicks", 0), -1);
  EXPECT_EQ(Offset("clicks", 1), 11);
  EXPECT_EQ(Offset("views", 0, other), -1);
  EXPECT_EQ(coordinator().DescribeGroup(other).state, "Dead");
  // Load agrees: the tombstones dropped them from the transactions.
  h_.Crash();
  EXPECT_EQ(Offset("clicks", 0), -1);
  EXPECT_EQ(Offset("clicks", 1), 11);
  EXPECT_EQ(Offset("views", 0, other), -1);
  EXPECT_EQ(coordinator().DescribeGroup(other).state, "Dead");
}

// A deleted topic's offsets pending in an open transaction go too: its
// commit must not bring them back.
TEST_F(GroupTxnOffsetsTest, TopicDeletionDropsPendingOffsetsOfTheTopic) {
  ASSERT_EQ(CommitTxn({P("clicks", 0, 10), P("views", 0, 11)}),
            (std::vector<ErrorCode>{ErrorCode::kNone, ErrorCode::kNone}));
  ASSERT_TRUE(coordinator().OnTopicDeleted("clicks").ok());
  EXPECT_EQ(Fetch("clicks", 0, true).error, ErrorCode::kNone);
  EXPECT_EQ(Fetch("views", 0, true).error, ErrorCode::kUnstableOffsetCommit);
  EndTxn(true);
  EXPECT_EQ(Offset("clicks", 0), -1);
  EXPECT_EQ(Offset("views", 0), 11);
  h_.Crash();
  EXPECT_EQ(Offset("clicks", 0), -1);
  EXPECT_EQ(Offset("views", 0), 11);
}

TEST_F(GroupTxnOffsetsTest, AFailedJoinKeepsAGroupWithOnlyPendingOffsets) {
  ASSERT_EQ(CommitTxn({P("clicks", 0, 10)}), std::vector<ErrorCode>{ErrorCode::kNone});
  JoinSlot ghost = JoinAs(coordinator(), kTxnGroup, "ghost");
  ASSERT_TRUE(ghost->has_value());
  EXPECT_EQ((*ghost)->error, ErrorCode::kUnknownMemberId);
  EndTxn(true);
  EXPECT_EQ(Offset("clicks", 0), 10);
}

}  // namespace
}  // namespace daruma::testing
