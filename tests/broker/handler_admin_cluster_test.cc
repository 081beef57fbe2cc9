// The admin APIs that describe or confirm what one node has (issue 19):
// DescribeCluster, DescribeLogDirs, OffsetForLeaderEpoch, DescribeProducers,
// ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments.
// One rule per case, through the generated codecs, at several versions
// including the flexible ones.
#include <gtest/gtest.h>

#include <filesystem>

#include "broker/api_handlers.h"
#include "broker/handler_harness.h"
#include "protocol/messages.h"

namespace daruma::broker::testing {
namespace {

DescribeClusterResponse DescribeCluster(HandlerHarness& h, int16_t version, int8_t endpoint_type,
                                        bool include_operations = false) {
  DescribeClusterRequest request;
  request.include_cluster_authorized_operations = include_operations;
  request.endpoint_type = endpoint_type;
  return h.Call(ApiKey::kDescribeCluster, version, request, EncodeDescribeClusterRequest,
                DecodeDescribeClusterResponse);
}

TEST(HandlerDescribeCluster, ThisNodeIsTheControllerAndTheOnlyBroker) {
  HandlerHarness h([](BrokerContext& ctx) { ctx.rack = "rack-a"; });
  for (int16_t v : {0, 1}) {
    DescribeClusterResponse r = DescribeCluster(h, v, 1);
    EXPECT_EQ(r.error_code, ErrorCode::kNone) << v;
    EXPECT_EQ(r.cluster_id, std::string(kDefaultClusterId));
    EXPECT_EQ(r.controller_id, kNodeId);
    ASSERT_EQ(r.brokers.size(), 1u);
    EXPECT_EQ(r.brokers[0].broker_id, kNodeId);
    EXPECT_EQ(r.brokers[0].host, "broker.test");
    EXPECT_EQ(r.brokers[0].port, 19092);
    EXPECT_EQ(r.brokers[0].rack, std::optional<std::string>("rack-a"));
    // Not asked for: the schema's "not requested" value.
    EXPECT_EQ(r.cluster_authorized_operations, INT32_MIN);
  }
}

TEST(HandlerDescribeCluster, NoRackIsNull) {
  HandlerHarness h;
  EXPECT_EQ(DescribeCluster(h, 1, 1).brokers.at(0).rack, std::nullopt);
}

TEST(HandlerDescribeCluster, AuthorizedOperationsAreEveryClusterOperationWithoutAnAuthorizer) {
  HandlerHarness h;
  // CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10,
  // ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
  EXPECT_EQ(DescribeCluster(h, 0, 1, true).cluster_authorized_operations, 8096);
}

TEST(HandlerDescribeCluster, ControllersEndpointIsMismatchedOnABroker) {
  HandlerHarness h;
  DescribeClusterResponse r = DescribeCluster(h, 1, 2);
  EXPECT_EQ(r.error_code, ErrorCode::kMismatchedEndpointType);
  EXPECT_EQ(r.endpoint_type, 2);
  EXPECT_TRUE(r.brokers.empty());
  ASSERT_TRUE(r.error_message.has_value());
  EXPECT_NE(r.error_message->find("CONTROLLER"), std::string::npos);
}

TEST(HandlerDescribeCluster, UnknownEndpointTypeIsUnsupported) {
  HandlerHarness h;
  EXPECT_EQ(DescribeCluster(h, 1, 7).error_code, ErrorCode::kUnsupportedEndpointType);
}

using LogDirTopics = std::vector<DescribeLogDirsRequest::Topic>;
using ElectTopics = std::vector<ElectLeadersRequest::Topic>;

DescribeLogDirsResponse DescribeLogDirs(HandlerHarness& h, int16_t version,
                                        std::optional<LogDirTopics> topics = std::nullopt) {
  DescribeLogDirsRequest request;
  request.topics = std::move(topics);
  return h.Call(ApiKey::kDescribeLogDirs, version, request, EncodeDescribeLogDirsRequest,
                DecodeDescribeLogDirsResponse);
}

TEST(HandlerDescribeLogDirs, NullTopicsListsEveryPartitionWithItsSize) {
  HandlerHarness h;
  h.CreateTopic("a", 2);
  h.CreateTopic("b", 1);
  h.Produce("a", 1, ClientBatch({"x", "y"}));
  for (int16_t v : {0, 1, 2, 3, 4}) {
    DescribeLogDirsResponse r = DescribeLogDirs(h, v);
    EXPECT_EQ(r.error_code, ErrorCode::kNone);
    ASSERT_EQ(r.results.size(), 1u) << v;
    const auto& dir = r.results[0];
    EXPECT_EQ(dir.error_code, ErrorCode::kNone);
    EXPECT_EQ(dir.log_dir, std::filesystem::path(h.dir()).lexically_normal().string());
    ASSERT_EQ(dir.topics.size(), 2u);
    EXPECT_EQ(dir.topics[0].name, "a");
    ASSERT_EQ(dir.topics[0].partitions.size(), 2u);
    for (const auto& p : dir.topics[0].partitions) {
      const int64_t size = h.manager().GetLog({"a", p.partition_index})->size_in_bytes();
      EXPECT_EQ(p.partition_size, size);
      EXPECT_EQ(p.offset_lag, 0);
      EXPECT_FALSE(p.is_future_key);
      if (p.partition_index == 1) {
        EXPECT_GT(size, 0);
      }
    }
    EXPECT_EQ(dir.topics[1].name, "b");
    if (v >= 4) {
      EXPECT_GT(dir.total_bytes, 0);
      EXPECT_GE(dir.usable_bytes, 0);
      EXPECT_LE(dir.usable_bytes, dir.total_bytes);
    } else {
      EXPECT_EQ(dir.total_bytes, -1);  // not on the wire before v4
    }
  }
}

TEST(HandlerDescribeLogDirs, NamedPartitionsOnlyAndUnknownOnesLeftOut) {
  HandlerHarness h;
  h.CreateTopic("a", 2);
  h.CreateTopic("b", 1);
  DescribeLogDirsResponse r = DescribeLogDirs(h, 2, LogDirTopics{{"a", {1, 7}}, {"nope", {0}}});
  ASSERT_EQ(r.results.size(), 1u);
  ASSERT_EQ(r.results[0].topics.size(), 1u);
  EXPECT_EQ(r.results[0].topics[0].name, "a");
  ASSERT_EQ(r.results[0].topics[0].partitions.size(), 1u);
  EXPECT_EQ(r.results[0].topics[0].partitions[0].partition_index, 1);
  // An empty list names nothing.
  EXPECT_TRUE(DescribeLogDirs(h, 3, LogDirTopics{}).results.at(0).topics.empty());
}

TEST(HandlerDescribeLogDirs, OfflineDirIsKafkaStorageError) {
  HandlerHarness h;
  h.CreateTopic("a", 1);
  h.manager().failure_channel().MaybeAddOfflineLogDir(h.dir(), Status::IoError("disk gone"));
  DescribeLogDirsResponse r = DescribeLogDirs(h, 4);
  ASSERT_EQ(r.results.size(), 1u);
  EXPECT_EQ(r.results[0].error_code, ErrorCode::kKafkaStorageError);
  EXPECT_TRUE(r.results[0].topics.empty());
}

OffsetForLeaderEpochResponse::Partition EpochEnd(HandlerHarness& h, int16_t version,
                                                 const std::string& topic, int32_t partition,
                                                 int32_t leader_epoch,
                                                 int32_t current_leader_epoch = -1,
                                                 int32_t replica_id = -2) {
  OffsetForLeaderEpochRequest request;
  request.replica_id = replica_id;
  request.topics.push_back({topic,
                            {{.partition = partition,
                              .current_leader_epoch = current_leader_epoch,
                              .leader_epoch = leader_epoch}}});
  OffsetForLeaderEpochResponse r =
      h.Call(ApiKey::kOffsetForLeaderEpoch, version, request, EncodeOffsetForLeaderEpochRequest,
             DecodeOffsetForLeaderEpochResponse);
  EXPECT_EQ(r.topics.size(), 1u);
  EXPECT_EQ(r.topics.at(0).topic, topic);
  return r.topics.at(0).partitions.at(0);
}

TEST(HandlerOffsetForLeaderEpoch, LatestEpochEndsAtTheLogEnd) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  h.Produce("t", 0, ClientBatch({"a", "b", "c"}));
  for (int16_t v : {0, 1, 2, 3, 4}) {
    auto p = EpochEnd(h, v, "t", 0, 0);
    EXPECT_EQ(p.error_code, ErrorCode::kNone) << v;
    EXPECT_EQ(p.end_offset, 3) << v;
    EXPECT_EQ(p.leader_epoch, v >= 1 ? 0 : -1) << v;  // not on the wire in v0
  }
}

TEST(HandlerOffsetForLeaderEpoch, EmptyLogKnowsItsLeaderEpochAtTheLogEnd) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  auto p = EpochEnd(h, 4, "t", 0, 0);
  EXPECT_EQ(p.error_code, ErrorCode::kNone);
  EXPECT_EQ(p.leader_epoch, 0);
  EXPECT_EQ(p.end_offset, 0);
}

TEST(HandlerOffsetForLeaderEpoch, OlderEpochsFromTheCacheAndUndefinedOnes) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  Log* log = h.manager().GetLog({"t", 0});
  // Data written under epochs 2 and 5 (as Kafka replicas would have).
  ASSERT_TRUE(log->AppendAsLeader(ClientBatch({"a", "b"}), 2).ok());
  ASSERT_TRUE(log->AppendAsLeader(ClientBatch({"c"}), 5).ok());
  log->UpdateHighWatermark(log->log_end_offset());
  auto between = EpochEnd(h, 4, "t", 0, 3);  // largest <= 3 is 2, next starts at 2
  EXPECT_EQ(between.leader_epoch, 2);
  EXPECT_EQ(between.end_offset, 2);
  auto below = EpochEnd(h, 4, "t", 0, 1);  // below every epoch: the first start
  EXPECT_EQ(below.leader_epoch, 1);
  EXPECT_EQ(below.end_offset, 0);
  auto latest = EpochEnd(h, 4, "t", 0, 5);
  EXPECT_EQ(latest.leader_epoch, 5);
  EXPECT_EQ(latest.end_offset, 3);
  auto above = EpochEnd(h, 4, "t", 0, 9);
  EXPECT_EQ(above.error_code, ErrorCode::kNone);
  EXPECT_EQ(above.leader_epoch, -1);
  EXPECT_EQ(above.end_offset, -1);
  auto undefined = EpochEnd(h, 3, "t", 0, -1);
  EXPECT_EQ(undefined.error_code, ErrorCode::kNone);
  EXPECT_EQ(undefined.leader_epoch, -1);
  EXPECT_EQ(undefined.end_offset, -1);
}

TEST(HandlerOffsetForLeaderEpoch, CurrentLeaderEpochIsCheckedAsFetchChecksIt) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  h.Produce("t", 0, ClientBatch({"a"}));
  EXPECT_EQ(EpochEnd(h, 2, "t", 0, 0, 0).error_code, ErrorCode::kNone);
  EXPECT_EQ(EpochEnd(h, 4, "t", 0, 0, 1).error_code, ErrorCode::kUnknownLeaderEpoch);
  auto unknown = EpochEnd(h, 4, "t", 0, 0, 3);
  EXPECT_EQ(unknown.end_offset, -1);
  EXPECT_EQ(unknown.leader_epoch, -1);
  // v0/v1 carry no current epoch: never fenced.
  EXPECT_EQ(EpochEnd(h, 1, "t", 0, 0, 9).error_code, ErrorCode::kNone);
}

TEST(HandlerOffsetForLeaderEpoch, ReplicaIdOfANonReplicaIsAnsweredAsKafkaDoes) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  h.Produce("t", 0, ClientBatch({"a", "b"}));
  // Kafka 3.9 answers from the leader whatever the replica id says.
  auto p = EpochEnd(h, 3, "t", 0, 0, -1, 42);
  EXPECT_EQ(p.error_code, ErrorCode::kNone);
  EXPECT_EQ(p.end_offset, 2);
}

TEST(HandlerOffsetForLeaderEpoch, UnknownTopicOrPartition) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  EXPECT_EQ(EpochEnd(h, 4, "t", 1, 0).error_code, ErrorCode::kUnknownTopicOrPartition);
  EXPECT_EQ(EpochEnd(h, 2, "nope", 0, 0).error_code, ErrorCode::kUnknownTopicOrPartition);
}

Bytes ProducerBatch(int64_t producer_id, int16_t epoch, int32_t base_sequence, int records,
                    int64_t timestamp, bool transactional = false) {
  BatchBuilderOptions options;
  options.producer_id = producer_id;
  options.producer_epoch = epoch;
  options.base_sequence = base_sequence;
  options.is_transactional = transactional;
  std::vector<RecordInput> inputs(static_cast<size_t>(records));
  for (auto& r : inputs) {
    r.timestamp = timestamp;
    r.value = "v";
  }
  Result<Bytes> batch = BuildRecordBatch(options, inputs);
  EXPECT_TRUE(batch.ok()) << batch.status().ToString();
  return batch.ok() ? *batch : Bytes{};
}

DescribeProducersResponse DescribeProducers(HandlerHarness& h, const std::string& topic,
                                            std::vector<int32_t> partitions) {
  DescribeProducersRequest request;
  request.topics.push_back({topic, std::move(partitions)});
  return h.Call(ApiKey::kDescribeProducers, 0, request, EncodeDescribeProducersRequest,
                DecodeDescribeProducersResponse);
}

TEST(HandlerDescribeProducers, ActiveProducersFromProducerState) {
  HandlerHarness h;
  h.CreateTopic("t", 2);
  Log* log = h.manager().GetLog({"t", 0});
  ASSERT_TRUE(log->AppendAsLeader(ProducerBatch(1000, 3, 0, 4, 5000), 0).ok());
  ASSERT_TRUE(log->AppendAsLeader(ProducerBatch(2000, 0, 0, 2, 6000, true), 0).ok());
  DescribeProducersResponse r = DescribeProducers(h, "t", {0, 1, 9});
  ASSERT_EQ(r.topics.size(), 1u);
  ASSERT_EQ(r.topics[0].partitions.size(), 3u);
  const auto& p0 = r.topics[0].partitions[0];
  EXPECT_EQ(p0.error_code, ErrorCode::kNone);
  ASSERT_EQ(p0.active_producers.size(), 2u);
  auto find = [&](int64_t id) {
    for (const auto& s : p0.active_producers) {
      if (s.producer_id == id) return s;
    }
    ADD_FAILURE() << "no producer " << id;
    return DescribeProducersResponse::Producer{};
  };
  const auto idempotent = find(1000);
  EXPECT_EQ(idempotent.producer_epoch, 3);
  EXPECT_EQ(idempotent.last_sequence, 3);
  EXPECT_EQ(idempotent.last_timestamp, 5000);
  EXPECT_EQ(idempotent.current_txn_start_offset, -1);
  const auto transactional = find(2000);
  EXPECT_EQ(transactional.last_sequence, 1);
  EXPECT_EQ(transactional.current_txn_start_offset, 4);  // its batch starts at offset 4
  // A partition nobody produced to has none; an unknown one is an error.
  EXPECT_EQ(r.topics[0].partitions[1].error_code, ErrorCode::kNone);
  EXPECT_TRUE(r.topics[0].partitions[1].active_producers.empty());
  EXPECT_EQ(r.topics[0].partitions[2].error_code, ErrorCode::kUnknownTopicOrPartition);
  EXPECT_EQ(DescribeProducers(h, "nope", {0}).topics.at(0).partitions.at(0).error_code,
            ErrorCode::kUnknownTopicOrPartition);
}

ElectLeadersResponse ElectLeaders(HandlerHarness& h, int16_t version,
                                  std::optional<std::vector<ElectLeadersRequest::Topic>> topics,
                                  int8_t type = 0) {
  ElectLeadersRequest request;
  request.election_type = type;
  request.topic_partitions = std::move(topics);
  return h.Call(ApiKey::kElectLeaders, version, request, EncodeElectLeadersRequest,
                DecodeElectLeadersResponse);
}

TEST(HandlerElectLeaders, ExistingPartitionsNeedNoElectionUnknownOnesAreUnknown) {
  HandlerHarness h;
  h.CreateTopic("t", 2);
  for (int16_t v : {0, 1, 2}) {
    ElectLeadersResponse r = ElectLeaders(h, v, ElectTopics{{"t", {0, 1, 5}}, {"nope", {0}}});
    EXPECT_EQ(r.error_code, ErrorCode::kNone);
    ASSERT_EQ(r.replica_election_results.size(), 2u) << v;
    const auto& t = r.replica_election_results[0];
    EXPECT_EQ(t.topic, "t");
    ASSERT_EQ(t.partition_result.size(), 3u);
    EXPECT_EQ(t.partition_result[0].error_code, ErrorCode::kElectionNotNeeded);
    EXPECT_EQ(t.partition_result[1].error_code, ErrorCode::kElectionNotNeeded);
    EXPECT_EQ(t.partition_result[2].partition_id, 5);
    EXPECT_EQ(t.partition_result[2].error_code, ErrorCode::kUnknownTopicOrPartition);
    EXPECT_EQ(r.replica_election_results[1].partition_result.at(0).error_code,
              ErrorCode::kUnknownTopicOrPartition);
  }
  // Unclean elections are not needed either: every partition has its leader.
  EXPECT_EQ(ElectLeaders(h, 1, ElectTopics{{"t", {0}}}, 1)
                .replica_election_results.at(0)
                .partition_result.at(0)
                .error_code,
            ErrorCode::kElectionNotNeeded);
}

TEST(HandlerElectLeaders, NullMeansAllPartitionsAndLeavesOutThoseNeedingNoElection) {
  HandlerHarness h;
  h.CreateTopic("t", 3);
  ElectLeadersResponse r = ElectLeaders(h, 2, std::nullopt);
  EXPECT_EQ(r.error_code, ErrorCode::kNone);
  EXPECT_TRUE(r.replica_election_results.empty());
}

TEST(HandlerElectLeaders, UnknownElectionTypeIsInvalidRequest) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  ElectLeadersResponse r = ElectLeaders(h, 2, ElectTopics{{"t", {0}}}, 5);
  EXPECT_EQ(r.error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(r.replica_election_results.at(0).partition_result.at(0).error_code,
            ErrorCode::kInvalidRequest);
}

AlterPartitionReassignmentsResponse::Partition Reassign(
    HandlerHarness& h, const std::string& topic, int32_t partition,
    std::optional<std::vector<int32_t>> replicas) {
  AlterPartitionReassignmentsRequest request;
  request.topics.push_back({topic, {{partition, std::move(replicas)}}});
  AlterPartitionReassignmentsResponse r =
      h.Call(ApiKey::kAlterPartitionReassignments, 0, request,
             EncodeAlterPartitionReassignmentsRequest, DecodeAlterPartitionReassignmentsResponse);
  EXPECT_EQ(r.error_code, ErrorCode::kNone);
  return r.responses.at(0).partitions.at(0);
}

TEST(HandlerPartitionReassignments, ThisNodeIsANoOpOtherBrokersAreInvalid) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  EXPECT_EQ(Reassign(h, "t", 0, std::vector<int32_t>{kNodeId}).error_code, ErrorCode::kNone);
  auto other = Reassign(h, "t", 0, std::vector<int32_t>{kNodeId, 2});
  EXPECT_EQ(other.error_code, ErrorCode::kInvalidReplicaAssignment);
  ASSERT_TRUE(other.error_message.has_value());
  EXPECT_NE(other.error_message->find("broker 2"), std::string::npos);
  EXPECT_EQ(Reassign(h, "t", 0, std::vector<int32_t>{}).error_code,
            ErrorCode::kInvalidReplicaAssignment);
  EXPECT_EQ(Reassign(h, "t", 0, std::vector<int32_t>{kNodeId, kNodeId}).error_code,
            ErrorCode::kInvalidReplicaAssignment);
  EXPECT_EQ(Reassign(h, "t", 0, std::nullopt).error_code, ErrorCode::kNoReassignmentInProgress);
  EXPECT_EQ(Reassign(h, "t", 4, std::vector<int32_t>{kNodeId}).error_code,
            ErrorCode::kUnknownTopicOrPartition);
  EXPECT_EQ(Reassign(h, "nope", 0, std::vector<int32_t>{kNodeId}).error_code,
            ErrorCode::kUnknownTopicOrPartition);
  // Nothing moved: the partition is where it was.
  EXPECT_NE(h.manager().GetLog({"t", 0}), nullptr);
}

TEST(HandlerPartitionReassignments, ListShowsNothingInProgress) {
  HandlerHarness h;
  h.CreateTopic("t", 2);
  Reassign(h, "t", 0, std::vector<int32_t>{kNodeId});
  ListPartitionReassignmentsRequest all;
  ListPartitionReassignmentsResponse r =
      h.Call(ApiKey::kListPartitionReassignments, 0, all, EncodeListPartitionReassignmentsRequest,
             DecodeListPartitionReassignmentsResponse);
  EXPECT_EQ(r.error_code, ErrorCode::kNone);
  EXPECT_EQ(r.error_message, std::nullopt);
  EXPECT_TRUE(r.topics.empty());
  ListPartitionReassignmentsRequest named;
  named.topics = std::vector<ListPartitionReassignmentsRequest::Topic>{{"t", {0, 1}}};
  EXPECT_TRUE(h.Call(ApiKey::kListPartitionReassignments, 0, named,
                     EncodeListPartitionReassignmentsRequest,
                     DecodeListPartitionReassignmentsResponse)
                  .topics.empty());
}

}  // namespace
}  // namespace daruma::broker::testing
