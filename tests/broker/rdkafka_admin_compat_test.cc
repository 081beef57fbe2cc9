// The admin APIs of issue 19 driven by librdkafka's C admin API (label
// compat) against `daruma serve`: rd_kafka_DeleteRecords moves the log start
// offset (the low watermark librdkafka then queries), rd_kafka_CreatePartitions
// grows a topic, rd_kafka_AlterConfigs replaces its overrides and
// rd_kafka_DescribeConfigs reads them back, each with one of its errors.
// Built with librdkafka only when pkg-config finds it (tests/CMakeLists.txt
// defines DARUMA_HAVE_RDKAFKA); otherwise the test reports SKIPPED.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <string>
#include <utility>

#include "daruma_process.h"
#include "rdkafka_admin_client.h"
#include "support/test_support.h"

namespace daruma::broker {
namespace {

using daruma::testing::TempDir;
using testing::DarumaProcess;

#ifdef DARUMA_HAVE_RDKAFKA

using testing::AdminResultError;
using testing::RdkafkaAdminClient;
using testing::RdkafkaEvent;

constexpr int kTimeoutMs = 20000;
constexpr char kTopic[] = "rdkafka-admin";

// The admin client, which also produces: it flushes what it produced before
// it closes.
class Client : public RdkafkaAdminClient {
 public:
  explicit Client(const std::string& bootstrap)
      : RdkafkaAdminClient(bootstrap, kTimeoutMs, kTimeoutMs) {}
  ~Client() { rd_kafka_flush(rk(), kTimeoutMs); }
};

rd_kafka_resp_err_t CreateTopic(Client& c, int partitions) {
  char err[512];
  rd_kafka_NewTopic_t* topic = rd_kafka_NewTopic_new(kTopic, partitions, 1, err, sizeof(err));
  rd_kafka_AdminOptions_t* options = c.Options(RD_KAFKA_ADMIN_OP_CREATETOPICS);
  rd_kafka_CreateTopics(c.rk(), &topic, 1, options, c.queue());
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_NewTopic_destroy(topic);
  RdkafkaEvent e = c.Await(RD_KAFKA_EVENT_CREATETOPICS_RESULT);
  if (!e) return RD_KAFKA_RESP_ERR__TIMED_OUT;
  size_t n = 0;
  const rd_kafka_topic_result_t** results =
      rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(e.get()), &n);
  return n == 1 ? rd_kafka_topic_result_error(results[0]) : RD_KAFKA_RESP_ERR__FAIL;
}

void Produce(Client& c, int count) {
  for (int i = 0; i < count; ++i) {
    const std::string value = "m" + std::to_string(i);
    ASSERT_EQ(rd_kafka_producev(c.rk(), RD_KAFKA_V_TOPIC(kTopic), RD_KAFKA_V_PARTITION(0),
                                RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
              RD_KAFKA_RESP_ERR_NO_ERROR);
  }
  ASSERT_EQ(rd_kafka_flush(c.rk(), kTimeoutMs), RD_KAFKA_RESP_ERR_NO_ERROR);
}

// DeleteRecords of partition 0 before `offset`: (error, low watermark).
std::pair<rd_kafka_resp_err_t, int64_t> DeleteRecordsBefore(Client& c, int64_t offset) {
  rd_kafka_topic_partition_list_t* offsets = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(offsets, kTopic, 0)->offset = offset;
  rd_kafka_DeleteRecords_t* del = rd_kafka_DeleteRecords_new(offsets);
  rd_kafka_topic_partition_list_destroy(offsets);
  rd_kafka_AdminOptions_t* options = c.Options(RD_KAFKA_ADMIN_OP_DELETERECORDS);
  rd_kafka_DeleteRecords(c.rk(), &del, 1, options, c.queue());
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_DeleteRecords_destroy(del);
  RdkafkaEvent e = c.Await(RD_KAFKA_EVENT_DELETERECORDS_RESULT);
  if (rd_kafka_resp_err_t err = AdminResultError(e)) return {err, -1};
  const rd_kafka_topic_partition_list_t* result =
      rd_kafka_DeleteRecords_result_offsets(rd_kafka_event_DeleteRecords_result(e.get()));
  if (result == nullptr || result->cnt != 1) return {RD_KAFKA_RESP_ERR__FAIL, -1};
  return {result->elems[0].err, result->elems[0].offset};
}

rd_kafka_resp_err_t CreatePartitions(Client& c, int total) {
  char err[512];
  rd_kafka_NewPartitions_t* parts =
      rd_kafka_NewPartitions_new(kTopic, size_t(total), err, sizeof(err));
  rd_kafka_AdminOptions_t* options = c.Options(RD_KAFKA_ADMIN_OP_CREATEPARTITIONS);
  rd_kafka_CreatePartitions(c.rk(), &parts, 1, options, c.queue());
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_NewPartitions_destroy(parts);
  RdkafkaEvent e = c.Await(RD_KAFKA_EVENT_CREATEPARTITIONS_RESULT);
  if (!e) return RD_KAFKA_RESP_ERR__TIMED_OUT;
  size_t n = 0;
  const rd_kafka_topic_result_t** results =
      rd_kafka_CreatePartitions_result_topics(rd_kafka_event_CreatePartitions_result(e.get()), &n);
  return n == 1 ? rd_kafka_topic_result_error(results[0]) : RD_KAFKA_RESP_ERR__FAIL;
}

rd_kafka_resp_err_t AlterConfigs(Client& c, const std::map<std::string, std::string>& configs) {
  rd_kafka_ConfigResource_t* res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, kTopic);
  for (const auto& [name, value] : configs) {
    rd_kafka_ConfigResource_set_config(res, name.c_str(), value.c_str());
  }
  rd_kafka_AdminOptions_t* options = c.Options(RD_KAFKA_ADMIN_OP_ALTERCONFIGS);
  rd_kafka_AlterConfigs(c.rk(), &res, 1, options, c.queue());
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_ConfigResource_destroy(res);
  RdkafkaEvent e = c.Await(RD_KAFKA_EVENT_ALTERCONFIGS_RESULT);
  if (rd_kafka_resp_err_t err = AdminResultError(e)) return err;
  size_t n = 0;
  const rd_kafka_ConfigResource_t** results =
      rd_kafka_AlterConfigs_result_resources(rd_kafka_event_AlterConfigs_result(e.get()), &n);
  return n == 1 ? rd_kafka_ConfigResource_error(results[0]) : RD_KAFKA_RESP_ERR__FAIL;
}

std::map<std::string, std::string> DescribeConfigs(Client& c) {
  std::map<std::string, std::string> out;
  rd_kafka_ConfigResource_t* res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, kTopic);
  rd_kafka_AdminOptions_t* options = c.Options(RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  rd_kafka_DescribeConfigs(c.rk(), &res, 1, options, c.queue());
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_ConfigResource_destroy(res);
  RdkafkaEvent e = c.Await(RD_KAFKA_EVENT_DESCRIBECONFIGS_RESULT);
  if (!e) return out;
  size_t n = 0;
  const rd_kafka_ConfigResource_t** results =
      rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(e.get()), &n);
  if (n != 1) return out;
  size_t entries = 0;
  const rd_kafka_ConfigEntry_t** configs = rd_kafka_ConfigResource_configs(results[0], &entries);
  for (size_t i = 0; i < entries; ++i) {
    const char* value = rd_kafka_ConfigEntry_value(configs[i]);
    out[rd_kafka_ConfigEntry_name(configs[i])] = value != nullptr ? value : "";
  }
  return out;
}

int PartitionCount(Client& c) {
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_topic_t* topic = rd_kafka_topic_new(c.rk(), kTopic, nullptr);
  int count = -1;
  if (rd_kafka_metadata(c.rk(), 0, topic, &md, kTimeoutMs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (md->topic_cnt == 1) count = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
  }
  rd_kafka_topic_destroy(topic);
  return count;
}

TEST(RdkafkaAdminCompat, DeleteRecordsCreatePartitionsAndAlterConfigs) {
  if (::access(testing::DarumaBinary().c_str(), X_OK) != 0) {
    GTEST_SKIP() << "SKIPPED: " << testing::DarumaBinary() << " not built";
  }
  TempDir dir;
  DarumaProcess daruma(dir.path(), "");
  ASSERT_TRUE(daruma.Start());
  ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
  {
    Client c(daruma.bootstrap());
    ASSERT_EQ(CreateTopic(c, 1), RD_KAFKA_RESP_ERR_NO_ERROR) << daruma.Log();
    Produce(c, 10);

    auto [err, low] = DeleteRecordsBefore(c, 4);
    EXPECT_EQ(err, RD_KAFKA_RESP_ERR_NO_ERROR) << rd_kafka_err2str(err);
    EXPECT_EQ(low, 4);
    int64_t lo = -1, hi = -1;
    ASSERT_EQ(rd_kafka_query_watermark_offsets(c.rk(), kTopic, 0, &lo, &hi, kTimeoutMs),
              RD_KAFKA_RESP_ERR_NO_ERROR);
    EXPECT_EQ(lo, 4);
    EXPECT_EQ(hi, 10);
    // RD_KAFKA_OFFSET_END (-1): everything up to the high watermark.
    auto [end_err, end_low] = DeleteRecordsBefore(c, RD_KAFKA_OFFSET_END);
    EXPECT_EQ(end_err, RD_KAFKA_RESP_ERR_NO_ERROR) << rd_kafka_err2str(end_err);
    EXPECT_EQ(end_low, 10);
    EXPECT_EQ(DeleteRecordsBefore(c, 11).first, RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE);

    EXPECT_EQ(CreatePartitions(c, 3), RD_KAFKA_RESP_ERR_NO_ERROR);
    EXPECT_EQ(CreatePartitions(c, 2), RD_KAFKA_RESP_ERR_INVALID_PARTITIONS);
    EXPECT_EQ(PartitionCount(c), 3);

    EXPECT_EQ(AlterConfigs(c, {{"retention.ms", "54321"}, {"max.message.bytes", "3000"}}),
              RD_KAFKA_RESP_ERR_NO_ERROR);
    EXPECT_EQ(AlterConfigs(c, {{"max.message.bytes", "huge"}}), RD_KAFKA_RESP_ERR_INVALID_CONFIG);
    std::map<std::string, std::string> configs = DescribeConfigs(c);
    EXPECT_EQ(configs["retention.ms"], "54321");
    EXPECT_EQ(configs["max.message.bytes"], "3000");
  }
  EXPECT_EQ(daruma.Stop(), 0) << daruma.Log();
}

#else

TEST(RdkafkaAdminCompat, DeleteRecordsCreatePartitionsAndAlterConfigs) {
  GTEST_SKIP() << "SKIPPED: built without librdkafka (pkg-config rdkafka not found)";
}

#endif

}  // namespace
}  // namespace daruma::broker
