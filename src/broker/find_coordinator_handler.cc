// FindCoordinator (spec §3.6): on a single node the coordinator of every group
// and transactional id is this broker. Groups are served by the group
// coordinator (coordinator/group_coordinator.h), transactional ids by the
// transaction coordinator (coordinator/transaction_coordinator.h).
#include <optional>
#include <string>

#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {

namespace {

// Group (0) and transactional id (1) keys are coordinated here; share groups
// (2, v6) are not served, which Kafka answers with INVALID_REQUEST too.
std::optional<std::string> RefuseKeyType(int8_t key_type) {
  if (key_type == kCoordinatorKeyTypeGroup || key_type == kCoordinatorKeyTypeTransaction) {
    return std::nullopt;
  }
  return "unsupported coordinator key type " + std::to_string(key_type);
}

// Kafka answers COORDINATOR_NOT_AVAILABLE for a key whose internal-topic
// partition has no leader; here, for one whose partition is not served (it
// failed to load, or its log dir is offline), so a client does not come
// back to a coordinator that answers only NOT_COORDINATOR. Before the
// coordinators have loaded this node is handed out: they answer
// COORDINATOR_LOAD_IN_PROGRESS, which the client waits out.
ErrorCode CoordinatorError(const HandlerEnv& env, int8_t key_type, const std::string& key) {
  ErrorCode e = ErrorCode::kNone;
  if (key_type == kCoordinatorKeyTypeGroup && env.groups != nullptr) {
    e = env.groups->Availability(key);
  } else if (key_type == kCoordinatorKeyTypeTransaction && env.txns != nullptr) {
    e = env.txns->Availability(key);
  }
  if (e == ErrorCode::kNone || e == ErrorCode::kCoordinatorLoadInProgress) return ErrorCode::kNone;
  return ErrorCode::kCoordinatorNotAvailable;
}

}  // namespace

void HandleFindCoordinator(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                           const Respond& respond) {
  Result<FindCoordinatorRequest> request = DecodeFindCoordinatorRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  FindCoordinatorResponse response;
  const std::optional<std::string> refused = RefuseKeyType(request->key_type);
  if (header.api_version >= 4) {
    // Batched keys (KIP-699): one answer per key, in request order.
    for (const std::string& key : request->coordinator_keys) {
      FindCoordinatorResponse::Coordinator c;
      c.key = key;
      if (refused) {
        c.node_id = -1;
        c.port = -1;
        c.error_code = ErrorCode::kInvalidRequest;
        c.error_message = *refused;
      } else if (ErrorCode e = CoordinatorError(env, request->key_type, key);
                 e != ErrorCode::kNone) {
        c.node_id = -1;
        c.port = -1;
        c.error_code = e;
      } else {
        c.node_id = env.ctx.node_id;
        c.host = env.ctx.host;
        c.port = env.ctx.port;
      }
      response.coordinators.push_back(std::move(c));
    }
  } else if (refused) {
    response.error_code = ErrorCode::kInvalidRequest;
    response.error_message = *refused;
  } else if (ErrorCode e = CoordinatorError(env, request->key_type, request->key);
             e != ErrorCode::kNone) {
    response.error_code = e;
    response.node_id = -1;
    response.port = -1;
  } else {
    response.node_id = env.ctx.node_id;
    response.host = env.ctx.host;
    response.port = env.ctx.port;
  }
  respond(EncodeResponseFrame(env, header, response, EncodeFindCoordinatorResponse), false);
}

}  // namespace daruma::broker
