// OffsetCommit, OffsetFetch and OffsetDelete: committed offsets of consumer
// groups (coordinator/group_coordinator.h), with the topic checks Kafka's
// KafkaApis makes before the coordinator sees a partition.
#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

bool PartitionExists(HandlerEnv& env, const std::string& topic, int32_t partition) {
  return env.topics.GetLog(TopicPartition{topic, partition}) != nullptr;
}

}  // namespace

void HandleOffsetCommit(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond) {
  Result<OffsetCommitRequest> request = DecodeOffsetCommitRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  OffsetCommitResponse response;
  OffsetCommitArgs args;
  args.group_id = request->group_id;
  args.generation_id = request->generation_id_or_member_epoch;
  args.member_id = request->member_id;
  args.group_instance_id = request->group_instance_id;
  args.retention_time_ms = request->retention_time_ms;
  // Where each partition's answer goes: (topic index, partition index) in
  // the response, and which ones reach the coordinator.
  std::vector<std::pair<size_t, size_t>> sent;
  for (const auto& topic : request->topics) {
    OffsetCommitResponse::Topic t;
    t.name = topic.name;
    for (const auto& p : topic.partitions) {
      OffsetCommitResponse::Partition out;
      out.partition_index = p.partition_index;
      if (env.groups == nullptr) {
        out.error_code = ErrorCode::kCoordinatorNotAvailable;
      } else if (!PartitionExists(env, topic.name, p.partition_index)) {
        out.error_code = ErrorCode::kUnknownTopicOrPartition;
      } else {
        OffsetCommitArgs::Partition c;
        c.topic = topic.name;
        c.partition = p.partition_index;
        c.offset = p.committed_offset;
        c.leader_epoch = p.committed_leader_epoch;
        c.metadata = p.committed_metadata;
        c.commit_timestamp = header.api_version == 1 ? p.commit_timestamp : -1;
        args.partitions.push_back(std::move(c));
        sent.emplace_back(response.topics.size(), t.partitions.size());
      }
      t.partitions.push_back(out);
    }
    response.topics.push_back(std::move(t));
  }
  if (!args.partitions.empty()) {
    const std::vector<ErrorCode> errors = env.groups->CommitOffsets(args);
    for (size_t i = 0; i < sent.size(); ++i) {
      response.topics[sent[i].first].partitions[sent[i].second].error_code = errors[i];
    }
  }
  respond(EncodeResponseFrame(env, header, response, EncodeOffsetCommitResponse), false);
}

namespace {

// The (topic, partition) pairs an OffsetFetch names; nullopt (every
// committed offset) when its topic list is null.
template <typename Topic>
std::optional<std::vector<std::pair<std::string, int32_t>>> Partitions(
    const std::optional<std::vector<Topic>>& topics) {
  if (!topics) return std::nullopt;
  std::vector<std::pair<std::string, int32_t>> out;
  for (const auto& t : *topics) {
    for (int32_t p : t.partition_indexes) out.emplace_back(t.name, p);
  }
  return out;
}

// One group's answer, in the v8+ shape; v0-7 copy it to the top level. With
// `require_stable` (v7+, KIP-447) a partition an open transaction holds an
// offset for carries UNSTABLE_OFFSET_COMMIT, a partition-level error in every
// version that has the flag.
OffsetFetchResponse::Group FetchGroup(
    HandlerEnv& env, const std::string& group_id,
    const std::optional<std::vector<std::pair<std::string, int32_t>>>& partitions,
    bool require_stable) {
  OffsetFetchResponse::Group g;
  g.group_id = group_id;
  OffsetFetchResult result;
  if (env.groups == nullptr) {
    result.error = ErrorCode::kCoordinatorNotAvailable;
  } else {
    result = env.groups->FetchOffsets(group_id, partitions, require_stable);
  }
  g.error_code = result.error;
  for (const OffsetFetchResult::Partition& p : result.partitions) {
    if (g.topics.empty() || g.topics.back().name != p.topic) {
      OffsetFetchResponse::GroupTopic t;
      t.name = p.topic;
      g.topics.push_back(std::move(t));
    }
    OffsetFetchResponse::GroupPartition out;
    out.partition_index = p.partition;
    out.committed_offset = p.offset;
    out.committed_leader_epoch = p.leader_epoch;
    out.metadata = p.metadata;
    out.error_code = p.error;
    g.topics.back().partitions.push_back(std::move(out));
  }
  return g;
}

}  // namespace

void HandleOffsetFetch(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                       const Respond& respond) {
  Result<OffsetFetchRequest> request = DecodeOffsetFetchRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  OffsetFetchResponse response;
  if (header.api_version >= 8) {
    for (const auto& group : request->groups) {
      response.groups.push_back(
          FetchGroup(env, group.group_id, Partitions(group.topics), request->require_stable));
    }
    return respond(EncodeResponseFrame(env, header, response, EncodeOffsetFetchResponse), false);
  }
  std::optional<std::vector<std::pair<std::string, int32_t>>> partitions =
      Partitions(request->topics);
  // Null means "every partition" only from v2; v0-1 read an empty list as
  // null (the schema's emptyisnull), which there asks for nothing.
  if (!partitions && header.api_version < 2) partitions.emplace();
  OffsetFetchResponse::Group g =
      FetchGroup(env, request->group_id, partitions, request->require_stable);
  // v0-1 have no group-level error: every requested partition carries it.
  const bool partition_errors = header.api_version < 2 && g.error_code != ErrorCode::kNone;
  if (header.api_version >= 2) response.error_code = g.error_code;
  if (partition_errors && partitions) {
    for (const auto& [topic, p] : *partitions) {
      if (response.topics.empty() || response.topics.back().name != topic) {
        OffsetFetchResponse::Topic t;
        t.name = topic;
        response.topics.push_back(std::move(t));
      }
      OffsetFetchResponse::Partition out;
      out.partition_index = p;
      out.committed_offset = -1;
      out.metadata = "";
      out.error_code = g.error_code;
      response.topics.back().partitions.push_back(std::move(out));
    }
  } else {
    for (auto& gt : g.topics) {
      OffsetFetchResponse::Topic t;
      t.name = gt.name;
      for (auto& gp : gt.partitions) {
        OffsetFetchResponse::Partition out;
        out.partition_index = gp.partition_index;
        out.committed_offset = gp.committed_offset;
        out.committed_leader_epoch = gp.committed_leader_epoch;
        out.metadata = std::move(gp.metadata);
        out.error_code = gp.error_code;
        t.partitions.push_back(std::move(out));
      }
      response.topics.push_back(std::move(t));
    }
  }
  respond(EncodeResponseFrame(env, header, response, EncodeOffsetFetchResponse), false);
}

void HandleOffsetDelete(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond) {
  Result<OffsetDeleteRequest> request = DecodeOffsetDeleteRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  OffsetDeleteResponse response;
  std::vector<std::pair<std::string, int32_t>> partitions;
  std::vector<std::pair<size_t, size_t>> sent;
  for (const auto& topic : request->topics) {
    OffsetDeleteResponse::Topic t;
    t.name = topic.name;
    for (const auto& p : topic.partitions) {
      OffsetDeleteResponse::Partition out;
      out.partition_index = p.partition_index;
      if (!PartitionExists(env, topic.name, p.partition_index)) {
        out.error_code = ErrorCode::kUnknownTopicOrPartition;
      } else {
        partitions.emplace_back(topic.name, p.partition_index);
        sent.emplace_back(response.topics.size(), t.partitions.size());
      }
      t.partitions.push_back(out);
    }
    response.topics.push_back(std::move(t));
  }
  if (env.groups == nullptr) {
    response.error_code = ErrorCode::kCoordinatorNotAvailable;
    response.topics.clear();
  } else {
    auto [error, errors] = env.groups->DeleteOffsets(request->group_id, partitions);
    response.error_code = error;
    if (error != ErrorCode::kNone) {
      response.topics.clear();
    } else {
      for (size_t i = 0; i < sent.size(); ++i) {
        response.topics[sent[i].first].partitions[sent[i].second].error_code = errors[i];
      }
    }
  }
  respond(EncodeResponseFrame(env, header, response, EncodeOffsetDeleteResponse), false);
}

}  // namespace daruma::broker
