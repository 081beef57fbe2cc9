// DeleteTopics (spec §3.8): every partition directory is renamed `-delete`
// and removed later (LogManager::AsyncDelete).
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
  if (deleted.ok()) return ErrorCode::kNone;
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
  respond(EncodeResponseFrame(env, header, response, EncodeDeleteTopicsResponse), false);
}

}  // namespace daruma::broker
