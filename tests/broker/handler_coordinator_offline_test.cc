// The coordinators when the log dir of their internal topic's partition is
// offline: Kafka's coordinator resigns a partition whose dir failed
// (NOT_COORDINATOR, FindCoordinator then COORDINATOR_NOT_AVAILABLE), and a
// partition that may be in a dir offline since start-up is not served as
// empty (a consumer would restart from auto.offset.reset).
#include <gtest/gtest.h>

#include <string>

#include "broker/dead_dir_file_system.h"
#include "broker/handler_harness.h"
#include "coordinator/offsets_records.h"

namespace daruma::broker::testing {
namespace {

constexpr int32_t kOffsetsPartitions = 50;  // offsets.topic.num.partitions

ErrorCode Commit(HandlerHarness& h, const std::string& group, int64_t offset) {
  OffsetCommitRequest commit;
  commit.group_id = group;
  OffsetCommitRequest::Topic t;
  t.name = "orders";
  t.partitions.push_back({.partition_index = 0, .committed_offset = offset});
  commit.topics.push_back(t);
  OffsetCommitResponse r = h.Call(ApiKey::kOffsetCommit, 2, commit, EncodeOffsetCommitRequest,
                                  DecodeOffsetCommitResponse);
  EXPECT_EQ(r.topics.size(), 1u);
  return r.topics.empty() ? ErrorCode::kUnknownServerError
                          : r.topics[0].partitions.at(0).error_code;
}

OffsetFetchResponse FetchOffsets(HandlerHarness& h, const std::string& group) {
  OffsetFetchRequest fetch;
  fetch.group_id = group;
  fetch.topics =
      std::vector<OffsetFetchRequest::Topic>{{.name = "orders", .partition_indexes = {0}}};
  return h.Call(ApiKey::kOffsetFetch, 2, fetch, EncodeOffsetFetchRequest,
                DecodeOffsetFetchResponse);
}

FindCoordinatorResponse FindCoordinator(HandlerHarness& h, const std::string& key, int8_t type) {
  return h.Call(ApiKey::kFindCoordinator, 2, FindCoordinatorRequest{key, type},
                EncodeFindCoordinatorRequest, DecodeFindCoordinatorResponse);
}

InitProducerIdResponse InitTransactional(HandlerHarness& h, const std::string& id) {
  InitProducerIdRequest request;
  request.transactional_id = id;
  request.transaction_timeout_ms = 60000;
  return h.Call(ApiKey::kInitProducerId, 4, request, EncodeInitProducerIdRequest,
                DecodeInitProducerIdResponse);
}

// The dir went offline while serving: nothing more is appended to the
// partition's log (its writes may never reach the disk), and the offsets in
// memory are not handed out as if the partition were still served.
TEST(HandlerCoordinatorOffline, AGroupWhoseDirWentOfflineIsNotCoordinatedHere) {
  HandlerHarness h;
  h.CreateTopic("orders", 1);
  ASSERT_EQ(Commit(h, "g", 7), ErrorCode::kNone);
  Log* log =
      h.manager().GetLog({kConsumerOffsetsTopic, OffsetsPartitionFor("g", kOffsetsPartitions)});
  ASSERT_NE(log, nullptr);
  const int64_t end = log->log_end_offset();

  h.manager().failure_channel().MaybeAddOfflineLogDir(h.dir(), Status::IoError("disk gone"));
  EXPECT_EQ(Commit(h, "g", 8), ErrorCode::kNotCoordinator);
  EXPECT_EQ(log->log_end_offset(), end);
  EXPECT_EQ(FetchOffsets(h, "g").error_code, ErrorCode::kNotCoordinator);
  FindCoordinatorResponse found = FindCoordinator(h, "g", kCoordinatorKeyTypeGroup);
  EXPECT_EQ(found.error_code, ErrorCode::kCoordinatorNotAvailable);
  EXPECT_EQ(found.node_id, -1);
}

TEST(HandlerCoordinatorOffline, ATransactionalIdWhoseDirWentOfflineIsNotCoordinatedHere) {
  HandlerHarness h;
  ASSERT_EQ(InitTransactional(h, "tx").error_code, ErrorCode::kNone);
  Log* log =
      h.manager().GetLog({kTransactionStateTopic, OffsetsPartitionFor("tx", kOffsetsPartitions)});
  ASSERT_NE(log, nullptr);
  const int64_t end = log->log_end_offset();

  h.manager().failure_channel().MaybeAddOfflineLogDir(h.dir(), Status::IoError("disk gone"));
  EXPECT_EQ(InitTransactional(h, "tx").error_code, ErrorCode::kNotCoordinator);
  EXPECT_EQ(log->log_end_offset(), end);
  EXPECT_EQ(FindCoordinator(h, "tx", kCoordinatorKeyTypeTransaction).error_code,
            ErrorCode::kCoordinatorNotAvailable);
}

// A dir offline since start-up: its partitions are unknown, so a group whose
// __consumer_offsets partition is missing may have its offsets there. It is
// COORDINATOR_NOT_AVAILABLE, never "no committed offset"; a group whose
// partition is loaded is served as usual.
TEST(HandlerCoordinatorOffline, AGroupWhosePartitionMayBeInADirOfflineSinceStartIsNotServed) {
  HandlerHarness h({}, /*log_dirs=*/2);
  h.CreateTopic("orders", 1);
  std::string in_second, in_first;
  for (int i = 0; i < 200 && (in_second.empty() || in_first.empty()); ++i) {
    const std::string group = "g" + std::to_string(i);
    ASSERT_EQ(Commit(h, group, 7), ErrorCode::kNone);
    Log* log =
        h.manager().GetLog({kConsumerOffsetsTopic, OffsetsPartitionFor(group, kOffsetsPartitions)});
    ASSERT_NE(log, nullptr);
    (ParentDir(log->dir()) == h.dirs()[1] ? in_second : in_first) = group;
  }
  ASSERT_FALSE(in_second.empty());
  ASSERT_FALSE(in_first.empty());
  DeadDirFileSystem fs({h.dirs()[1]});
  h.RestartOn(&fs);
  ASSERT_TRUE(h.manager().failure_channel().IsOffline(h.dirs()[1]));

  EXPECT_EQ(FetchOffsets(h, in_second).error_code, ErrorCode::kCoordinatorNotAvailable);
  EXPECT_EQ(Commit(h, in_second, 8), ErrorCode::kCoordinatorNotAvailable);
  EXPECT_EQ(FindCoordinator(h, in_second, kCoordinatorKeyTypeGroup).error_code,
            ErrorCode::kCoordinatorNotAvailable);

  OffsetFetchResponse served = FetchOffsets(h, in_first);
  EXPECT_EQ(served.error_code, ErrorCode::kNone);
  ASSERT_EQ(served.topics.size(), 1u);
  EXPECT_EQ(served.topics[0].partitions.at(0).committed_offset, 7);
  EXPECT_EQ(FindCoordinator(h, in_first, kCoordinatorKeyTypeGroup).node_id, kNodeId);
  h.RestartOn(nullptr);  // before `fs` goes
}

}  // namespace
}  // namespace daruma::broker::testing
