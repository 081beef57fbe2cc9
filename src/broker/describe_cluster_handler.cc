// DescribeCluster (KIP-700, KIP-919): the cluster id, this node as the
// controller Kafka reports to clients and as the only broker. A v1 request
// for the controllers' endpoints reaches a broker endpoint here:
// MISMATCHED_ENDPOINT_TYPE, as a Kafka broker answers; an endpoint type Kafka
// does not define is UNSUPPORTED_ENDPOINT_TYPE. (v0 has no EndpointType: it
// always asks for brokers; Kafka's INVALID_REQUEST for v0 is kept for form.)
#include <cstdint>

#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

constexpr int8_t kEndpointTypeBrokers = 1;
constexpr int8_t kEndpointTypeControllers = 2;

// Kafka's AclEntry.supportedOperations(CLUSTER) as a bit field (bit = the
// AclOperation code): CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
// DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12. Without an
// authorizer Kafka reports every supported operation as authorized.
constexpr int32_t kClusterOperations =
    (1 << 5) | (1 << 7) | (1 << 8) | (1 << 9) | (1 << 10) | (1 << 11) | (1 << 12);
// The schema default: "not requested".
constexpr int32_t kOperationsNotRequested = INT32_MIN;

}  // namespace

void HandleDescribeCluster(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                           const Respond& respond) {
  Result<DescribeClusterRequest> request = DecodeDescribeClusterRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  DescribeClusterResponse response;
  response.endpoint_type = request->endpoint_type;
  const bool v0 = header.api_version == 0;
  if (request->endpoint_type == kEndpointTypeControllers) {
    response.error_code = v0 ? ErrorCode::kInvalidRequest : ErrorCode::kMismatchedEndpointType;
    response.error_message =
        "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type "
        "CONTROLLER";
  } else if (request->endpoint_type != kEndpointTypeBrokers) {
    response.error_code = v0 ? ErrorCode::kInvalidRequest : ErrorCode::kUnsupportedEndpointType;
    response.error_message =
        "Unsupported endpoint type " + std::to_string(int(request->endpoint_type));
  } else {
    response.cluster_id = env.ctx.cluster_id;
    response.controller_id = env.ctx.node_id;
    response.brokers.push_back({.broker_id = env.ctx.node_id,
                                .host = env.ctx.host,
                                .port = env.ctx.port,
                                .rack = env.ctx.rack});
    response.cluster_authorized_operations = request->include_cluster_authorized_operations
                                                 ? kClusterOperations
                                                 : kOperationsNotRequested;
  }
  respond(EncodeResponseFrame(env, header, response, EncodeDescribeClusterResponse), false);
}

}  // namespace daruma::broker
