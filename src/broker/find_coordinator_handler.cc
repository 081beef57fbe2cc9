// FindCoordinator (spec §3.6): on a single node the coordinator of every group
// and transactional id is this broker. Groups and transactions are not served
// yet (their APIs are not advertised), so a client that goes on to JoinGroup
// gets a clear "unsupported" from its own version negotiation.
#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {

void HandleFindCoordinator(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                           const Respond& respond) {
  Result<FindCoordinatorRequest> request = DecodeFindCoordinatorRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  FindCoordinatorResponse response;
  if (request->key_type != kCoordinatorKeyTypeGroup &&
      request->key_type != kCoordinatorKeyTypeTransaction) {
    response.error_code = ErrorCode::kInvalidRequest;
    response.error_message = "unknown coordinator key type " + std::to_string(request->key_type);
  } else {
    response.node_id = env.ctx.node_id;
    response.host = env.ctx.host;
    response.port = env.ctx.port;
  }
  respond(EncodeResponseFrame(env, header, response, EncodeFindCoordinatorResponse), false);
}

}  // namespace daruma::broker
