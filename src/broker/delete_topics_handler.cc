// DeleteTopics (spec §3.8): every partition directory is renamed `-delete`
// and removed later (LogManager::AsyncDelete). Topics are named up to v5;
// from v6 each is named by name or by id, not both (Kafka's rules: both is
// INVALID_REQUEST, an unknown id UNKNOWN_TOPIC_ID). Its committed offsets
// leave every group (GroupCoordinator::OnTopicDeleted).
#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

ErrorCode DeleteOne(HandlerEnv& env, const std::string& name) {
  if (!env.ctx.delete_topic_enable) return ErrorCode::kTopicDeletionDisabled;
  if (IsInternalTopic(name)) return ErrorCode::kInvalidRequest;  // implementation choice, §3.8
  if (!env.topics.Find(name)) return ErrorCode::kUnknownTopicOrPartition;
  Status deleted = env.topics.Delete(name);
  env.slices.ForgetTopic(name);
  if (deleted.ok()) {
    // The topic is gone whatever becomes of its offsets' tombstones: a
    // failed append is logged, not answered.
    Status offsets = env.groups != nullptr ? env.groups->OnTopicDeleted(name) : Status::Ok();
    if (!offsets.ok() && env.ctx.log != nullptr) {
      env.ctx.log->Write(LogLevel::kError, "deleted_topic_offsets_not_removed",
                         LogFields().Add("topic", name).Add("reason", offsets.ToString()));
    }
    return ErrorCode::kNone;
  }
  if (deleted.IsNotFound()) return ErrorCode::kUnknownTopicOrPartition;
  return deleted.IsIoError() ? ErrorCode::kKafkaStorageError : ErrorCode::kUnknownServerError;
}

}  // namespace

void HandleDeleteTopics(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond) {
  Result<DeleteTopicsRequest> request = DecodeDeleteTopicsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  DeleteTopicsResponse response;
  for (const std::string& name : request->topic_names) {
    response.responses.push_back({.name = name, .error_code = DeleteOne(env, name)});
  }
  for (const DeleteTopicsRequest::Topic& topic : request->topics) {
    DeleteTopicsResponse::TopicResult result;
    result.name = topic.name;
    result.topic_id = topic.topic_id;
    const bool by_id = topic.topic_id != WireUuid{};
    if (topic.name && by_id) {
      result.error_code = ErrorCode::kInvalidRequest;
      result.error_message = "topic name and topic id can not both be specified";
    } else if (by_id) {
      std::optional<TopicInfo> info = env.topics.FindById(Uuid(topic.topic_id));
      if (!info) {
        result.error_code = ErrorCode::kUnknownTopicId;
      } else {
        result.name = info->name;
        result.error_code = DeleteOne(env, info->name);
      }
    } else {
      const std::string name = topic.name.value_or("");
      if (std::optional<TopicInfo> info = env.topics.Find(name)) result.topic_id = info->id.bytes();
      result.error_code = DeleteOne(env, name);
    }
    response.responses.push_back(std::move(result));
  }
  respond(EncodeResponseFrame(env, header, response, EncodeDeleteTopicsResponse), false);
}

}  // namespace daruma::broker
