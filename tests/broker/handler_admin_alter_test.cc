// The admin APIs that change a topic (issue 19): CreatePartitions,
// DeleteRecords, AlterConfigs and IncrementalAlterConfigs, their errors, and
// what survives a restart. One rule per case, through the generated codecs,
// at several versions including the flexible ones.
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <thread>

#include "broker/api_handlers.h"
#include "broker/handler_harness.h"
#include "log/partition_metadata_file.h"
#include "protocol/messages.h"
#include "support/test_support.h"

namespace daruma::broker::testing {
namespace {

CreatePartitionsResponse::Result CreatePartitions(
    HandlerHarness& h, const std::string& topic, int32_t count, int16_t version = 3,
    bool validate_only = false,
    std::optional<std::vector<CreatePartitionsRequest::Assignment>> assignments = std::nullopt) {
  CreatePartitionsRequest request;
  request.topics.push_back({topic, count, std::move(assignments)});
  request.timeout_ms = 1000;
  request.validate_only = validate_only;
  CreatePartitionsResponse r =
      h.Call(ApiKey::kCreatePartitions, version, request, EncodeCreatePartitionsRequest,
             DecodeCreatePartitionsResponse);
  EXPECT_EQ(r.results.size(), 1u);
  return r.results.at(0);
}

TEST(HandlerCreatePartitions, GrowsTheTopicWithItsIdAndKeepsItAcrossARestart) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  const Uuid id = h.handler().topics().Find("t")->id;
  auto grown = CreatePartitions(h, "t", 3, 0);
  EXPECT_EQ(grown.error_code, ErrorCode::kNone);
  EXPECT_EQ(grown.error_message, std::nullopt);
  EXPECT_EQ(h.handler().topics().Find("t")->partitions, 3);
  for (int32_t p = 1; p < 3; ++p) {
    auto meta =
        PartitionMetadataFile(h.dir() + "/t-" + std::to_string(p) + "/partition.metadata").Read();
    ASSERT_TRUE(meta.ok()) << meta.status().ToString();
    EXPECT_EQ(meta->topic_id, id);
  }
  // The new partition takes produce at once.
  EXPECT_EQ(h.Produce("t", 2, ClientBatch({"x"})).error_code, ErrorCode::kNone);
  h.Restart();
  std::optional<TopicInfo> t = h.handler().topics().Find("t");
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->partitions, 3);
  EXPECT_EQ(t->id, id);
  EXPECT_EQ(h.Fetch("t", 2, 0).high_watermark, 1);
}

TEST(HandlerCreatePartitions, CountNotLargerIsInvalidPartitions) {
  HandlerHarness h;
  h.CreateTopic("t", 2);
  for (int16_t v : {1, 2}) {
    auto same = CreatePartitions(h, "t", 2, v);
    EXPECT_EQ(same.error_code, ErrorCode::kInvalidPartitions);
    EXPECT_EQ(same.error_message, std::optional<std::string>("Topic already has 2 partition(s)."));
    EXPECT_EQ(CreatePartitions(h, "t", 1, v).error_code, ErrorCode::kInvalidPartitions);
  }
  EXPECT_EQ(h.handler().topics().Find("t")->partitions, 2);
}

TEST(HandlerCreatePartitions, MoreThanTenThousandNewPartitionsIsAPolicyViolation) {
  HandlerHarness h;
  h.CreateTopic("t", 2);
  for (int32_t count : {std::numeric_limits<int32_t>::max(), 10003}) {
    auto huge = CreatePartitions(h, "t", count, 3);
    EXPECT_EQ(huge.error_code, ErrorCode::kPolicyViolation);
    EXPECT_EQ(huge.error_message,
              std::optional<std::string>("Unable to perform excessively large batch operation."));
  }
  EXPECT_EQ(h.handler().topics().Find("t")->partitions, 2);
  EXPECT_EQ(CreatePartitions(h, "t", 10002, 3, /*validate_only=*/true).error_code,
            ErrorCode::kNone);
}

TEST(HandlerLogErrors, AnErrorOnALogDeletedMeanwhileIsUnknownTopicNotStorage) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  const TopicPartition tp{"t", 0};
  ErrorCode error = ErrorCode::kNone;
  Log* log = h.handler().topics().ServedLog(tp, &error);
  ASSERT_NE(log, nullptr);
  const TopicRegistry& topics = h.handler().topics();
  const Status io = Status::IoError("t-0/00000000000000000000.log: No such file or directory");
  EXPECT_EQ(ErrorCodeForLogStatus(topics, tp, log, io), ErrorCode::kKafkaStorageError);
  EXPECT_EQ(ErrorCodeForLogStatus(topics, tp, log, Status::OutOfRange("above")),
            ErrorCode::kOffsetOutOfRange);
  // Reads (Fetch, ListOffsets): damaged bytes of our own log are a storage error.
  const Status damaged = Status::Corruption("t-0/00000000000000000000.log: CRC mismatch");
  EXPECT_EQ(ErrorCodeForLogRead(topics, tp, log, damaged), ErrorCode::kKafkaStorageError);
  EXPECT_EQ(ErrorCodeForLogRead(topics, tp, log, io), ErrorCode::kKafkaStorageError);
  ASSERT_TRUE(h.handler().topics().Delete("t").ok());
  EXPECT_EQ(ErrorCodeForLogStatus(topics, tp, log, io), ErrorCode::kUnknownTopicOrPartition);
  EXPECT_EQ(ErrorCodeForLogRead(topics, tp, log, io), ErrorCode::kUnknownTopicOrPartition);
  EXPECT_EQ(ErrorCodeForLogRead(topics, tp, log, damaged), ErrorCode::kUnknownTopicOrPartition);
}

// A write failure that took the log's dir offline is a storage error
// whatever its status (kNotFound: a roll found the partition dir deleted
// underneath), not UNKNOWN_SERVER_ERROR; on an online dir it stays unknown.
TEST(HandlerLogErrors, AnUnknownErrorOnALogInAnOfflineDirIsStorage) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  const TopicPartition tp{"t", 0};
  ErrorCode error = ErrorCode::kNone;
  Log* log = h.handler().topics().ServedLog(tp, &error);
  ASSERT_NE(log, nullptr);
  const TopicRegistry& topics = h.handler().topics();
  const Status gone = Status::NotFound("t-0/00000000000000000001.log: No such file or directory");
  EXPECT_EQ(ErrorCodeForLogStatus(topics, tp, log, gone), ErrorCode::kUnknownServerError);
  h.manager().failure_channel().MaybeAddOfflineLogDir(h.dir(), Status::IoError("disk gone"));
  EXPECT_EQ(ErrorCodeForLogStatus(topics, tp, log, gone), ErrorCode::kKafkaStorageError);
  EXPECT_EQ(ErrorCodeForLogStatus(topics, tp, log, Status::OutOfRange("above")),
            ErrorCode::kOffsetOutOfRange);
}

TEST(HandlerCreatePartitions, UnknownTopic) {
  HandlerHarness h;
  EXPECT_EQ(CreatePartitions(h, "nope", 3).error_code, ErrorCode::kUnknownTopicOrPartition);
}

TEST(HandlerCreatePartitions, AssignmentsMustBeExactlyThisNodeOncePerNewPartition) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  using A = CreatePartitionsRequest::Assignment;
  EXPECT_EQ(CreatePartitions(h, "t", 3, 2, false, std::vector<A>{{{kNodeId}}}).error_code,
            ErrorCode::kInvalidReplicaAssignment);  // one assignment for two partitions
  EXPECT_EQ(CreatePartitions(h, "t", 2, 2, false, std::vector<A>{{{kNodeId + 1}}}).error_code,
            ErrorCode::kInvalidReplicaAssignment);
  EXPECT_EQ(CreatePartitions(h, "t", 2, 2, false, std::vector<A>{{{}}}).error_code,
            ErrorCode::kInvalidReplicaAssignment);
  EXPECT_EQ(CreatePartitions(h, "t", 2, 2, false, std::vector<A>{{{kNodeId, kNodeId}}}).error_code,
            ErrorCode::kInvalidReplicaAssignment);
  EXPECT_EQ(h.handler().topics().Find("t")->partitions, 1);
  EXPECT_EQ(
      CreatePartitions(h, "t", 3, 3, false, std::vector<A>{{{kNodeId}}, {{kNodeId}}}).error_code,
      ErrorCode::kNone);
  EXPECT_EQ(h.handler().topics().Find("t")->partitions, 3);
}

TEST(HandlerCreatePartitions, ValidateOnlyCreatesNothing) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  EXPECT_EQ(CreatePartitions(h, "t", 4, 3, true).error_code, ErrorCode::kNone);
  EXPECT_EQ(CreatePartitions(h, "t", 1, 3, true).error_code, ErrorCode::kInvalidPartitions);
  EXPECT_EQ(h.handler().topics().Find("t")->partitions, 1);
  EXPECT_EQ(h.manager().GetLog({"t", 1}), nullptr);
}

TEST(HandlerCreatePartitions, TopicNamedTwiceIsInvalidRequest) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  h.CreateTopic("u", 1);
  CreatePartitionsRequest request;
  request.topics.push_back({"t", 2, std::nullopt});
  request.topics.push_back({"u", 2, std::nullopt});
  request.topics.push_back({"t", 3, std::nullopt});
  CreatePartitionsResponse r =
      h.Call(ApiKey::kCreatePartitions, 2, request, EncodeCreatePartitionsRequest,
             DecodeCreatePartitionsResponse);
  ASSERT_EQ(r.results.size(), 3u);
  EXPECT_EQ(r.results[0].error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(r.results[1].error_code, ErrorCode::kNone);
  EXPECT_EQ(r.results[2].error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(h.handler().topics().Find("t")->partitions, 1);
  EXPECT_EQ(h.handler().topics().Find("u")->partitions, 2);
}

DeleteRecordsResponse::Partition DeleteRecords(HandlerHarness& h, const std::string& topic,
                                               int32_t partition, int64_t offset,
                                               int16_t version = 2) {
  DeleteRecordsRequest request;
  request.topics.push_back({topic, {{partition, offset}}});
  request.timeout_ms = 1000;
  DeleteRecordsResponse r = h.Call(ApiKey::kDeleteRecords, version, request,
                                   EncodeDeleteRecordsRequest, DecodeDeleteRecordsResponse);
  EXPECT_EQ(r.topics.size(), 1u);
  return r.topics.at(0).partitions.at(0);
}

int64_t Earliest(HandlerHarness& h, const std::string& topic) {
  ListOffsetsRequest request;
  request.topics.push_back({topic, {{.partition_index = 0, .timestamp = -2}}});
  ListOffsetsResponse r =
      h.Call(ApiKey::kListOffsets, 2, request, EncodeListOffsetsRequest, DecodeListOffsetsResponse);
  return r.topics.at(0).partitions.at(0).offset;
}

TEST(HandlerDeleteRecords, MovesTheLogStartOffsetSeenByListOffsetsAndFetch) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  h.Produce("t", 0, ClientBatch({"a", "b", "c"}));
  h.Produce("t", 0, ClientBatch({"d", "e"}));
  for (int16_t v : {0, 1}) {
    auto p = DeleteRecords(h, "t", 0, 1 + v, v);
    EXPECT_EQ(p.error_code, ErrorCode::kNone);
    EXPECT_EQ(p.low_watermark, 1 + v);
  }
  EXPECT_EQ(Earliest(h, "t"), 2);
  EXPECT_EQ(h.Fetch("t", 0, 0).error_code, ErrorCode::kOffsetOutOfRange);
  auto from_start = h.Fetch("t", 0, 2);
  EXPECT_EQ(from_start.error_code, ErrorCode::kNone);
  EXPECT_EQ(from_start.log_start_offset, 2);
  // Lower than the current start: nothing moves, the answer is the start.
  auto lower = DeleteRecords(h, "t", 0, 1);
  EXPECT_EQ(lower.error_code, ErrorCode::kNone);
  EXPECT_EQ(lower.low_watermark, 2);
}

TEST(HandlerDeleteRecords, MinusOneMeansTheHighWatermark) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  h.Produce("t", 0, ClientBatch({"a", "b", "c"}));
  auto p = DeleteRecords(h, "t", 0, -1);
  EXPECT_EQ(p.error_code, ErrorCode::kNone);
  EXPECT_EQ(p.low_watermark, 3);
  EXPECT_EQ(Earliest(h, "t"), 3);
}

TEST(HandlerDeleteRecords, OffsetsAboveTheHighWatermarkOrNegativeAreOutOfRange) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  h.Produce("t", 0, ClientBatch({"a", "b"}));
  auto above = DeleteRecords(h, "t", 0, 3);
  EXPECT_EQ(above.error_code, ErrorCode::kOffsetOutOfRange);
  EXPECT_EQ(above.low_watermark, -1);
  EXPECT_EQ(DeleteRecords(h, "t", 0, -2).error_code, ErrorCode::kOffsetOutOfRange);
  EXPECT_EQ(Earliest(h, "t"), 0);
  // Exactly the high watermark is allowed.
  EXPECT_EQ(DeleteRecords(h, "t", 0, 2).error_code, ErrorCode::kNone);
}

TEST(HandlerDeleteRecords, UnknownPartitionAndCompactedTopic) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  h.CreateTopic("c", 1, {{"cleanup.policy", "compact"}});
  EXPECT_EQ(DeleteRecords(h, "t", 1, 0).error_code, ErrorCode::kUnknownTopicOrPartition);
  EXPECT_EQ(DeleteRecords(h, "nope", 0, 0).error_code, ErrorCode::kUnknownTopicOrPartition);
  EXPECT_EQ(DeleteRecords(h, "c", 0, 0).error_code, ErrorCode::kPolicyViolation);
}

TEST(HandlerDeleteRecords, NewStartIsCheckpointedAndSurvivesARestart) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  h.Produce("t", 0, ClientBatch({"a", "b", "c", "d"}));
  EXPECT_EQ(DeleteRecords(h, "t", 0, 3).error_code, ErrorCode::kNone);
  // Written before the answer, in Kafka's log-start-offset-checkpoint format.
  EXPECT_EQ(daruma::testing::ReadFileToString(h.dir() + "/" + kLogStartOffsetCheckpointFile),
            "0\n1\nt 0 3\n");
  h.Restart();
  EXPECT_EQ(Earliest(h, "t"), 3);
  EXPECT_EQ(h.manager().GetLog({"t", 0})->log_start_offset(), 3);
}

DescribeConfigsResponse::ResourceResult DescribeTopic(HandlerHarness& h, const std::string& topic) {
  DescribeConfigsRequest request;
  request.resources.push_back({kResourceTypeTopic, topic, std::nullopt});
  DescribeConfigsResponse r = h.Call(ApiKey::kDescribeConfigs, 1, request,
                                     EncodeDescribeConfigsRequest, DecodeDescribeConfigsResponse);
  return r.results.at(0);
}

std::map<std::string, DescribeConfigsResponse::Config> ConfigsOf(HandlerHarness& h,
                                                                 const std::string& topic) {
  std::map<std::string, DescribeConfigsResponse::Config> by_name;
  for (const auto& c : DescribeTopic(h, topic).configs) by_name[c.name] = c;
  return by_name;
}

AlterConfigsResponse AlterConfigs(HandlerHarness& h, std::vector<AlterConfigsRequest::Resource> rs,
                                  int16_t version = 2, bool validate_only = false) {
  AlterConfigsRequest request;
  request.resources = std::move(rs);
  request.validate_only = validate_only;
  return h.Call(ApiKey::kAlterConfigs, version, request, EncodeAlterConfigsRequest,
                DecodeAlterConfigsResponse);
}

TEST(HandlerAlterConfigs, ReplacesTheWholeOverrideSetPersistsAndUpdatesTheLog) {
  HandlerHarness h;
  h.CreateTopic("t", 1, {{"retention.ms", "1000"}, {"segment.bytes", "1048576"}});
  for (int16_t v : {0, 1, 2}) {
    AlterConfigsResponse r = AlterConfigs(
        h, {{kResourceTypeTopic, "t", {{"retention.ms", "5000"}, {"max.message.bytes", "2000"}}}},
        v);
    ASSERT_EQ(r.responses.size(), 1u);
    EXPECT_EQ(r.responses[0].error_code, ErrorCode::kNone) << v;
    EXPECT_EQ(r.responses[0].resource_name, "t");
    EXPECT_EQ(r.responses[0].resource_type, kResourceTypeTopic);
  }
  auto configs = ConfigsOf(h, "t");
  EXPECT_EQ(configs["retention.ms"].value, "5000");
  EXPECT_EQ(configs["retention.ms"].config_source, int8_t(ConfigSource::kTopicConfig));
  EXPECT_EQ(configs["max.message.bytes"].value, "2000");
  // Left out: back to the default.
  EXPECT_EQ(configs["segment.bytes"].value, "1073741824");
  EXPECT_EQ(configs["segment.bytes"].config_source, int8_t(ConfigSource::kDefaultConfig));
  EXPECT_EQ(h.manager().GetLog({"t", 0})->config_snapshot().retention_ms, 5000);
  h.Restart();
  configs = ConfigsOf(h, "t");
  EXPECT_EQ(configs["retention.ms"].value, "5000");
  EXPECT_EQ(configs["segment.bytes"].value, "1073741824");
  EXPECT_EQ(h.manager().GetLog({"t", 0})->config_snapshot().retention_ms, 5000);
}

TEST(HandlerAlterConfigs, BadValueIsInvalidConfigNamingKeyAndValueAndChangesNothing) {
  HandlerHarness h;
  h.CreateTopic("t", 1, {{"retention.ms", "1000"}});
  AlterConfigsResponse r =
      AlterConfigs(h, {{kResourceTypeTopic, "t", {{"segment.bytes", "lots"}}}}, 1);
  EXPECT_EQ(r.responses.at(0).error_code, ErrorCode::kInvalidConfig);
  ASSERT_TRUE(r.responses[0].error_message.has_value());
  EXPECT_NE(r.responses[0].error_message->find("segment.bytes"), std::string::npos);
  EXPECT_NE(r.responses[0].error_message->find("lots"), std::string::npos);
  EXPECT_EQ(AlterConfigs(h, {{kResourceTypeTopic, "t", {{"no.such.config", "1"}}}})
                .responses.at(0)
                .error_code,
            ErrorCode::kInvalidConfig);
  EXPECT_EQ(ConfigsOf(h, "t")["retention.ms"].value, "1000");
}

TEST(HandlerAlterConfigs, ValidateOnlyChangesNothing) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  AlterConfigsResponse r =
      AlterConfigs(h, {{kResourceTypeTopic, "t", {{"retention.ms", "5000"}}}}, 2, true);
  EXPECT_EQ(r.responses.at(0).error_code, ErrorCode::kNone);
  EXPECT_EQ(ConfigsOf(h, "t")["retention.ms"].config_source, int8_t(ConfigSource::kDefaultConfig));
}

TEST(HandlerAlterConfigs, ResourceErrorsAsKafka) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  AlterConfigsResponse r =
      AlterConfigs(h, {{kResourceTypeTopic, "nope", {{"retention.ms", "1"}}},
                       {kResourceTypeTopic, "t", {{"retention.ms", std::nullopt}}},
                       {kResourceTypeTopic, "t", {}},
                       {kResourceTypeTopic, "t", {}},
                       {kResourceTypeBroker, std::to_string(kNodeId), {{"num.partitions", "3"}}},
                       {kResourceTypeBroker, "", {}},
                       {kResourceTypeBroker, "7", {}},
                       {8, "root", {}}});
  ASSERT_EQ(r.responses.size(), 8u);
  EXPECT_EQ(r.responses[0].error_code, ErrorCode::kUnknownTopicOrPartition);
  // "t" three times: Kafka refuses every copy.
  EXPECT_EQ(r.responses[1].error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(r.responses[2].error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(r.responses[3].error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(r.responses[4].error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(
      r.responses[4].error_message,
      std::optional<std::string>("Cannot update these configs dynamically: Set(num.partitions)"));
  EXPECT_EQ(r.responses[5].error_code, ErrorCode::kNone);
  EXPECT_EQ(r.responses[6].error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(r.responses[7].error_code, ErrorCode::kInvalidRequest);
}

TEST(HandlerAlterConfigs, NullValueAndDuplicateKeyAreInvalidRequest) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  EXPECT_EQ(AlterConfigs(h, {{kResourceTypeTopic, "t", {{"retention.ms", std::nullopt}}}})
                .responses.at(0)
                .error_code,
            ErrorCode::kInvalidRequest);
  EXPECT_EQ(
      AlterConfigs(h, {{kResourceTypeTopic, "t", {{"retention.ms", "1"}, {"retention.ms", "2"}}}})
          .responses.at(0)
          .error_code,
      ErrorCode::kInvalidRequest);
}

IncrementalAlterConfigsResponse::Response Incremental(
    HandlerHarness& h, const std::string& topic,
    std::vector<IncrementalAlterConfigsRequest::Config> configs, int16_t version = 1,
    bool validate_only = false, int8_t type = kResourceTypeTopic) {
  IncrementalAlterConfigsRequest request;
  request.resources.push_back({type, topic, std::move(configs)});
  request.validate_only = validate_only;
  IncrementalAlterConfigsResponse r =
      h.Call(ApiKey::kIncrementalAlterConfigs, version, request,
             EncodeIncrementalAlterConfigsRequest, DecodeIncrementalAlterConfigsResponse);
  EXPECT_EQ(r.responses.size(), 1u);
  return r.responses.at(0);
}

TEST(HandlerIncrementalAlterConfigs, SetAndDeleteKeepTheOtherOverrides) {
  HandlerHarness h;
  h.CreateTopic("t", 1, {{"retention.ms", "1000"}, {"segment.bytes", "1048576"}});
  for (int16_t v : {0, 1}) {
    auto r = Incremental(h, "t", {{"max.message.bytes", 0, "4000"}}, v);
    EXPECT_EQ(r.error_code, ErrorCode::kNone) << v;
  }
  EXPECT_EQ(Incremental(h, "t", {{"retention.ms", 1, std::nullopt}}).error_code, ErrorCode::kNone);
  auto configs = ConfigsOf(h, "t");
  EXPECT_EQ(configs["max.message.bytes"].value, "4000");
  EXPECT_EQ(configs["segment.bytes"].value, "1048576");
  EXPECT_EQ(configs["retention.ms"].config_source, int8_t(ConfigSource::kDefaultConfig));
  EXPECT_EQ(h.manager().GetLog({"t", 0})->config_snapshot().max_message_bytes, 4000);
  h.Restart();
  configs = ConfigsOf(h, "t");
  EXPECT_EQ(configs["max.message.bytes"].value, "4000");
  EXPECT_EQ(configs["segment.bytes"].value, "1048576");
  EXPECT_EQ(configs["retention.ms"].config_source, int8_t(ConfigSource::kDefaultConfig));
}

TEST(HandlerIncrementalAlterConfigs, AppendAndSubtractOnAListConfig) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  EXPECT_EQ(Incremental(h, "t", {{"cleanup.policy", 2, "compact"}}).error_code, ErrorCode::kNone);
  EXPECT_EQ(ConfigsOf(h, "t")["cleanup.policy"].value, "delete,compact");
  EXPECT_TRUE(h.manager().GetLog({"t", 0})->config_snapshot().compact);
  // Appending what is there adds nothing.
  EXPECT_EQ(Incremental(h, "t", {{"cleanup.policy", 2, "delete"}}).error_code, ErrorCode::kNone);
  EXPECT_EQ(ConfigsOf(h, "t")["cleanup.policy"].value, "delete,compact");
  EXPECT_EQ(Incremental(h, "t", {{"cleanup.policy", 3, "delete"}}).error_code, ErrorCode::kNone);
  EXPECT_EQ(ConfigsOf(h, "t")["cleanup.policy"].value, "compact");
  EXPECT_FALSE(h.manager().GetLog({"t", 0})->config_snapshot().delete_policy);
}

TEST(HandlerIncrementalAlterConfigs, AppendToANonListIsInvalidConfig) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  auto r = Incremental(h, "t", {{"retention.ms", 2, "5"}});
  EXPECT_EQ(r.error_code, ErrorCode::kInvalidConfig);
  EXPECT_EQ(r.error_message, std::optional<std::string>(
                                 "Can't APPEND to key retention.ms because its type is not LIST."));
}

TEST(HandlerIncrementalAlterConfigs, ErrorsAsKafka) {
  HandlerHarness h;
  h.CreateTopic("t", 1, {{"retention.ms", "1000"}});
  EXPECT_EQ(Incremental(h, "nope", {{"retention.ms", 0, "1"}}).error_code,
            ErrorCode::kUnknownTopicOrPartition);
  auto bad = Incremental(h, "t", {{"retention.ms", 0, "soon"}}, 0);
  EXPECT_EQ(bad.error_code, ErrorCode::kInvalidConfig);
  ASSERT_TRUE(bad.error_message.has_value());
  EXPECT_NE(bad.error_message->find("retention.ms"), std::string::npos);
  EXPECT_NE(bad.error_message->find("soon"), std::string::npos);
  EXPECT_EQ(Incremental(h, "t", {{"retention.ms", 0, std::nullopt}}).error_code,
            ErrorCode::kInvalidRequest);
  EXPECT_EQ(Incremental(h, "t", {{"retention.ms", 9, "1"}}).error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(ConfigsOf(h, "t")["retention.ms"].value, "1000");
  auto broker = Incremental(h, std::to_string(kNodeId), {{"log.retention.ms", 0, "1"}}, 1, false,
                            kResourceTypeBroker);
  EXPECT_EQ(broker.error_code, ErrorCode::kInvalidRequest);
  EXPECT_EQ(Incremental(h, "root", {{"kafka", 0, "DEBUG"}}, 1, false, 8).error_code,
            ErrorCode::kInvalidConfig);
}

TEST(HandlerIncrementalAlterConfigs, ValidateOnlyChangesNothing) {
  HandlerHarness h;
  h.CreateTopic("t", 1, {{"retention.ms", "1000"}});
  EXPECT_EQ(Incremental(h, "t", {{"retention.ms", 0, "9"}}, 1, true).error_code, ErrorCode::kNone);
  EXPECT_EQ(ConfigsOf(h, "t")["retention.ms"].value, "1000");
}

TEST(HandlerIncrementalAlterConfigs, ConcurrentEditsOfOneTopicLoseNothing) {
  HandlerHarness h;
  h.CreateTopic("t", 1);
  TopicRegistry& topics = h.handler().topics();
  // Each edit reads the current overrides and adds to them: without the
  // registry's admin lock around the whole edit, one thread's write could
  // drop the other's key.
  auto editor = [&](const std::string& key) {
    for (int i = 1; i <= 20; ++i) {
      auto edit = [&](const TopicOverrides& current) -> Result<TopicOverrides> {
        TopicOverrides next = current;
        next[key] = std::to_string(100000 + i);
        return next;
      };
      EXPECT_TRUE(topics.EditOverrides("t", edit, false).ok());
    }
  };
  std::thread a(editor, "retention.ms");
  std::thread b(editor, "segment.bytes");
  a.join();
  b.join();
  TopicOverrides overrides = topics.Find("t")->overrides;
  EXPECT_EQ(overrides["retention.ms"], "100020");
  EXPECT_EQ(overrides["segment.bytes"], "100020");
}

}  // namespace
}  // namespace daruma::broker::testing
