// Kafka's classic consumer-group protocol against `daruma serve` with real
// clients (issue 21, label compat), the admin views: ListGroups,
// DescribeGroups, DeleteGroups, OffsetFetch of a whole group, OffsetDelete
// and an OffsetCommit from outside the group, from the admin clients, while
// two confluent-kafka members (consumer_group_harness.h) run the group.
//
// What is proven, each by the outcome the clients observe: a running group
// is Stable with two members whose assignments split the topic; DeleteGroups
// of it is NON_EMPTY_GROUP; after the members close it is Empty with its
// offsets; once deleted it is not listed and its committed offsets are gone
// (OFFSET_INVALID). Both Python admin clients (confluent's list_groups:
// ListGroups v0 + DescribeGroups v0; kafka-python's: ListGroups v2,
// DescribeGroups v3, OffsetFetch v3 with null topics, DeleteGroups v1) and,
// when the test binary links librdkafka, its C admin API (ListGroups v4 with
// a state filter, DescribeGroups v4, OffsetFetch v7, OffsetCommit v7 from
// AlterConsumerGroupOffsets, OffsetDelete v0, DeleteGroups v1).
//
// confluent-kafka 1.7.0's AdminClient has no list_consumer_groups /
// describe_consumer_groups / delete_consumer_groups (confluent-kafka 2.0
// added them over the librdkafka calls used here from C).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "consumer_group_harness.h"
#include "rdkafka_admin_client.h"

namespace daruma::broker::testing {
namespace {

// Scenario 7: the group through the Python admin clients while its two
// members run (Stable, both members, their split, the offsets; deleting it is
// NON_EMPTY_GROUP), after they close (Empty, the offsets kept) and after
// DeleteGroups (not listed, no offsets: Consumer.committed() is
// OFFSET_INVALID).
TEST_F(ConsumerGroupCompatTest, PythonAdminClientsSeeTheGroupStableThenEmptyThenDeleted) {
  DARUMA_REQUIRE_CLIENTS("confluent", "kafka-python");
  constexpr int kPerPartition = 100;
  const std::string topic = "admin-view";
  const std::string group = "g-admin-view";
  ASSERT_TRUE(StartBroker());
  ASSERT_NO_FATAL_FAILURE(Produce("confluent", topic, 0, kPerPartition * kPartitions));
  std::unique_ptr<ChildProcess> a;
  std::unique_ptr<ChildProcess> b;
  ASSERT_NO_FATAL_FAILURE(RunTwoMembersToTheEnd(group, topic, kPerPartition, &a, &b));
  AdminView("running", group, topic, kPerPartition);
  RequestStop("a");
  RequestStop("b");
  EXPECT_EQ(a->Wait(30), 0) << Diag("a");
  EXPECT_EQ(b->Wait(30), 0) << Diag("b");
  AdminView("empty", group, topic, kPerPartition);
  AdminView("delete", group, topic, kPerPartition);
  EXPECT_EQ(daruma_->Stop(), 0) << BrokerLog();
}

#ifdef DARUMA_HAVE_RDKAFKA

// The admin requests' timeout, and how long their results are awaited.
constexpr int kAdminTimeoutMs = 20000;
constexpr int kAdminAwaitMs = kAdminTimeoutMs + 5000;

// ListConsumerGroups (ListGroups v4; `states` is its state filter, empty for
// every group): group -> state.
std::map<std::string, rd_kafka_consumer_group_state_t> ListGroups(
    RdkafkaAdminClient& c, std::vector<rd_kafka_consumer_group_state_t> states) {
  std::map<std::string, rd_kafka_consumer_group_state_t> out;
  rd_kafka_AdminOptions_t* options = c.Options(RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS);
  if (!states.empty()) {
    rd_kafka_error_t* error = rd_kafka_AdminOptions_set_match_consumer_group_states(
        options, states.data(), states.size());
    EXPECT_EQ(error, nullptr) << rd_kafka_error_string(error);
    if (error != nullptr) rd_kafka_error_destroy(error);
  }
  rd_kafka_ListConsumerGroups(c.rk(), options, c.queue());
  rd_kafka_AdminOptions_destroy(options);
  RdkafkaEvent e = c.Await(RD_KAFKA_EVENT_LISTCONSUMERGROUPS_RESULT);
  if (!e) {
    ADD_FAILURE() << "ListConsumerGroups timed out";
    return out;
  }
  EXPECT_EQ(rd_kafka_event_error(e.get()), RD_KAFKA_RESP_ERR_NO_ERROR)
      << rd_kafka_event_error_string(e.get());
  const rd_kafka_ListConsumerGroups_result_t* result =
      rd_kafka_event_ListConsumerGroups_result(e.get());
  size_t n = 0;
  const rd_kafka_ConsumerGroupListing_t** groups =
      rd_kafka_ListConsumerGroups_result_valid(result, &n);
  for (size_t i = 0; i < n; ++i) {
    out[rd_kafka_ConsumerGroupListing_group_id(groups[i])] =
        rd_kafka_ConsumerGroupListing_state(groups[i]);
  }
  size_t errors = 0;
  const rd_kafka_error_t** error = rd_kafka_ListConsumerGroups_result_errors(result, &errors);
  EXPECT_EQ(errors, 0u) << (errors > 0 ? rd_kafka_error_string(error[0]) : "");
  return out;
}

struct GroupDescription {
  std::string error;  // "" when none
  rd_kafka_consumer_group_state_t state = RD_KAFKA_CONSUMER_GROUP_STATE_UNKNOWN;
  std::string assignor;
  std::vector<std::set<int>> members;  // each member's partitions of the topic
};

// DescribeConsumerGroups (DescribeGroups v4) of one group.
GroupDescription DescribeGroup(RdkafkaAdminClient& c, const std::string& group,
                               const std::string& topic) {
  GroupDescription out;
  auto failed = [&out](const std::string& why) {
    out.error = why;
    return out;
  };
  const char* groups[] = {group.c_str()};
  rd_kafka_AdminOptions_t* options = c.Options(RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
  rd_kafka_DescribeConsumerGroups(c.rk(), groups, 1, options, c.queue());
  rd_kafka_AdminOptions_destroy(options);
  RdkafkaEvent e = c.Await(RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT);
  if (!e) return failed("timed out");
  if (rd_kafka_event_error(e.get())) return failed(rd_kafka_event_error_string(e.get()));
  size_t n = 0;
  const rd_kafka_ConsumerGroupDescription_t** described =
      rd_kafka_DescribeConsumerGroups_result_groups(
          rd_kafka_event_DescribeConsumerGroups_result(e.get()), &n);
  if (n != 1) return failed(std::to_string(n) + " descriptions");
  const rd_kafka_ConsumerGroupDescription_t* d = described[0];
  if (const rd_kafka_error_t* error = rd_kafka_ConsumerGroupDescription_error(d)) {
    out.error = rd_kafka_error_string(error);
  }
  out.state = rd_kafka_ConsumerGroupDescription_state(d);
  const char* assignor = rd_kafka_ConsumerGroupDescription_partition_assignor(d);
  out.assignor = assignor != nullptr ? assignor : "";
  for (size_t i = 0; i < rd_kafka_ConsumerGroupDescription_member_count(d); ++i) {
    const rd_kafka_MemberDescription_t* member = rd_kafka_ConsumerGroupDescription_member(d, i);
    const rd_kafka_topic_partition_list_t* partitions =
        rd_kafka_MemberAssignment_partitions(rd_kafka_MemberDescription_assignment(member));
    std::set<int> share;
    for (int j = 0; partitions != nullptr && j < partitions->cnt; ++j) {
      if (topic == partitions->elems[j].topic) share.insert(partitions->elems[j].partition);
    }
    out.members.push_back(share);
  }
  return out;
}

// The group's error, else the first partition's, of a group result event.
rd_kafka_resp_err_t GroupResultError(const rd_kafka_group_result_t** results, size_t n) {
  if (n != 1) return RD_KAFKA_RESP_ERR__FAIL;
  if (const rd_kafka_error_t* error = rd_kafka_group_result_error(results[0])) {
    return rd_kafka_error_code(error);
  }
  const rd_kafka_topic_partition_list_t* partitions = rd_kafka_group_result_partitions(results[0]);
  for (int i = 0; partitions != nullptr && i < partitions->cnt; ++i) {
    if (partitions->elems[i].err) return partitions->elems[i].err;
  }
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

// DeleteGroups v1 of one group.
rd_kafka_resp_err_t DeleteGroup(RdkafkaAdminClient& c, const std::string& group) {
  rd_kafka_DeleteGroup_t* del = rd_kafka_DeleteGroup_new(group.c_str());
  rd_kafka_AdminOptions_t* options = c.Options(RD_KAFKA_ADMIN_OP_DELETEGROUPS);
  rd_kafka_DeleteGroups(c.rk(), &del, 1, options, c.queue());
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_DeleteGroup_destroy(del);
  RdkafkaEvent e = c.Await(RD_KAFKA_EVENT_DELETEGROUPS_RESULT);
  if (rd_kafka_resp_err_t err = AdminResultError(e)) return err;
  size_t n = 0;
  const rd_kafka_group_result_t** results =
      rd_kafka_DeleteGroups_result_groups(rd_kafka_event_DeleteGroups_result(e.get()), &n);
  return GroupResultError(results, n);
}

// ListConsumerGroupOffsets of every partition (OffsetFetch v7, null topics):
// partition of `topic` -> committed offset.
std::map<int, int64_t> GroupOffsets(RdkafkaAdminClient& c, const std::string& group,
                                    const std::string& topic) {
  std::map<int, int64_t> out;
  rd_kafka_ListConsumerGroupOffsets_t* list =
      rd_kafka_ListConsumerGroupOffsets_new(group.c_str(), nullptr);
  rd_kafka_AdminOptions_t* options = c.Options(RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
  rd_kafka_ListConsumerGroupOffsets(c.rk(), &list, 1, options, c.queue());
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_ListConsumerGroupOffsets_destroy(list);
  RdkafkaEvent e = c.Await(RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT);
  if (!e) {
    ADD_FAILURE() << "ListConsumerGroupOffsets timed out";
    return out;
  }
  EXPECT_EQ(rd_kafka_event_error(e.get()), RD_KAFKA_RESP_ERR_NO_ERROR)
      << rd_kafka_event_error_string(e.get());
  size_t n = 0;
  const rd_kafka_group_result_t** results = rd_kafka_ListConsumerGroupOffsets_result_groups(
      rd_kafka_event_ListConsumerGroupOffsets_result(e.get()), &n);
  EXPECT_EQ(GroupResultError(results, n), RD_KAFKA_RESP_ERR_NO_ERROR);
  const rd_kafka_topic_partition_list_t* partitions =
      n == 1 ? rd_kafka_group_result_partitions(results[0]) : nullptr;
  for (int i = 0; partitions != nullptr && i < partitions->cnt; ++i) {
    if (topic == partitions->elems[i].topic) {
      out[partitions->elems[i].partition] = partitions->elems[i].offset;
    }
  }
  return out;
}

// AlterConsumerGroupOffsets (OffsetCommit v7 outside any generation) of one
// partition.
rd_kafka_resp_err_t AlterOffset(RdkafkaAdminClient& c, const std::string& group,
                                const std::string& topic, int partition, int64_t offset) {
  rd_kafka_topic_partition_list_t* partitions = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(partitions, topic.c_str(), partition)->offset = offset;
  rd_kafka_AlterConsumerGroupOffsets_t* alter =
      rd_kafka_AlterConsumerGroupOffsets_new(group.c_str(), partitions);
  rd_kafka_topic_partition_list_destroy(partitions);
  rd_kafka_AdminOptions_t* options = c.Options(RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS);
  rd_kafka_AlterConsumerGroupOffsets(c.rk(), &alter, 1, options, c.queue());
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_AlterConsumerGroupOffsets_destroy(alter);
  RdkafkaEvent e = c.Await(RD_KAFKA_EVENT_ALTERCONSUMERGROUPOFFSETS_RESULT);
  if (rd_kafka_resp_err_t err = AdminResultError(e)) return err;
  size_t n = 0;
  const rd_kafka_group_result_t** results = rd_kafka_AlterConsumerGroupOffsets_result_groups(
      rd_kafka_event_AlterConsumerGroupOffsets_result(e.get()), &n);
  return GroupResultError(results, n);
}

// DeleteConsumerGroupOffsets (OffsetDelete v0) of one partition.
rd_kafka_resp_err_t DeleteOffset(RdkafkaAdminClient& c, const std::string& group,
                                 const std::string& topic, int partition) {
  rd_kafka_topic_partition_list_t* partitions = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(partitions, topic.c_str(), partition);
  rd_kafka_DeleteConsumerGroupOffsets_t* del =
      rd_kafka_DeleteConsumerGroupOffsets_new(group.c_str(), partitions);
  rd_kafka_topic_partition_list_destroy(partitions);
  rd_kafka_AdminOptions_t* options = c.Options(RD_KAFKA_ADMIN_OP_DELETECONSUMERGROUPOFFSETS);
  rd_kafka_DeleteConsumerGroupOffsets(c.rk(), &del, 1, options, c.queue());
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_DeleteConsumerGroupOffsets_destroy(del);
  RdkafkaEvent e = c.Await(RD_KAFKA_EVENT_DELETECONSUMERGROUPOFFSETS_RESULT);
  if (rd_kafka_resp_err_t err = AdminResultError(e)) return err;
  size_t n = 0;
  const rd_kafka_group_result_t** results = rd_kafka_DeleteConsumerGroupOffsets_result_groups(
      rd_kafka_event_DeleteConsumerGroupOffsets_result(e.get()), &n);
  return GroupResultError(results, n);
}

// Scenario 7 through librdkafka's C admin API (what confluent-kafka 2.x's
// list/describe/delete_consumer_groups and *_consumer_group_offsets call),
// plus OffsetDelete and an offset commit from outside the group: while the
// members run, the group is listed Stable (and not under a filter for Empty),
// described with both members and the range assignor's split, and neither
// the group nor an offset of its subscribed topic can be deleted
// (NON_EMPTY_GROUP, GROUP_SUBSCRIBED_TO_TOPIC); once they closed it is Empty,
// an offset can be set and deleted, and then the group itself.
TEST_F(ConsumerGroupCompatTest, LibrdkafkaAdminApiListsDescribesAltersAndDeletesGroups) {
  DARUMA_REQUIRE_CLIENTS("confluent");
  constexpr int kPerPartition = 100;
  const std::string topic = "rd-groups";
  const std::string group = "g-rd-groups";
  ASSERT_TRUE(StartBroker());
  ASSERT_NO_FATAL_FAILURE(Produce("confluent", topic, 0, kPerPartition * kPartitions));
  std::unique_ptr<ChildProcess> a;
  std::unique_ptr<ChildProcess> b;
  ASSERT_NO_FATAL_FAILURE(RunTwoMembersToTheEnd(group, topic, kPerPartition, &a, &b));
  {
    RdkafkaAdminClient c(daruma_->bootstrap(), kAdminTimeoutMs, kAdminAwaitMs);
    auto listed = ListGroups(c, {});
    ASSERT_EQ(listed.count(group), 1u);
    EXPECT_EQ(listed[group], RD_KAFKA_CONSUMER_GROUP_STATE_STABLE)
        << rd_kafka_consumer_group_state_name(listed[group]);
    EXPECT_EQ(ListGroups(c, {RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY}).count(group), 0u);
    const GroupDescription running = DescribeGroup(c, group, topic);
    EXPECT_EQ(running.error, "");
    EXPECT_EQ(running.state, RD_KAFKA_CONSUMER_GROUP_STATE_STABLE)
        << rd_kafka_consumer_group_state_name(running.state);
    EXPECT_EQ(running.assignor, "range");
    ASSERT_EQ(running.members.size(), 2u);
    EXPECT_FALSE(running.members[0].empty());
    EXPECT_FALSE(running.members[1].empty());
    EXPECT_EQ(running.members[0].size() + running.members[1].size(), size_t(kPartitions));
    EXPECT_EQ(Union(running.members[0], running.members[1]), AllPartitions());
    EXPECT_EQ(GroupOffsets(c, group, topic), EveryPartitionAt(kPerPartition));
    EXPECT_EQ(DeleteGroup(c, group), RD_KAFKA_RESP_ERR_NON_EMPTY_GROUP);
    EXPECT_EQ(DeleteOffset(c, group, topic, 0), RD_KAFKA_RESP_ERR_GROUP_SUBSCRIBED_TO_TOPIC);
    EXPECT_EQ(GroupOffsets(c, group, topic), EveryPartitionAt(kPerPartition));
  }
  RequestStop("a");
  RequestStop("b");
  EXPECT_EQ(a->Wait(30), 0) << Diag("a");
  EXPECT_EQ(b->Wait(30), 0) << Diag("b");
  {
    RdkafkaAdminClient c(daruma_->bootstrap(), kAdminTimeoutMs, kAdminAwaitMs);
    auto empty = ListGroups(c, {RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY});
    ASSERT_EQ(empty.count(group), 1u);
    EXPECT_EQ(empty[group], RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY);
    const GroupDescription idle = DescribeGroup(c, group, topic);
    EXPECT_EQ(idle.error, "");
    EXPECT_EQ(idle.state, RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY)
        << rd_kafka_consumer_group_state_name(idle.state);
    EXPECT_TRUE(idle.members.empty());

    std::map<int, int64_t> offsets = EveryPartitionAt(kPerPartition);
    EXPECT_EQ(AlterOffset(c, group, topic, 1, 42), RD_KAFKA_RESP_ERR_NO_ERROR);
    offsets[1] = 42;
    EXPECT_EQ(GroupOffsets(c, group, topic), offsets);
    EXPECT_EQ(DeleteOffset(c, group, topic, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
    offsets.erase(0);
    EXPECT_EQ(GroupOffsets(c, group, topic), offsets);

    EXPECT_EQ(DeleteGroup(c, group), RD_KAFKA_RESP_ERR_NO_ERROR);
    EXPECT_EQ(ListGroups(c, {}).count(group), 0u);
    EXPECT_EQ(GroupOffsets(c, group, topic), (std::map<int, int64_t>{}));
  }
  EXPECT_EQ(Committed(group, topic), EveryPartitionAt(-1001));
  EXPECT_EQ(daruma_->Stop(), 0) << BrokerLog();
}

#else

TEST_F(ConsumerGroupCompatTest, LibrdkafkaAdminApiListsDescribesAltersAndDeletesGroups) {
  GTEST_SKIP() << "SKIPPED: built without librdkafka (pkg-config rdkafka not found)";
}

#endif

}  // namespace
}  // namespace daruma::broker::testing
