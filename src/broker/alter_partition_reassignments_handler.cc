// AlterPartitionReassignments (KIP-455; Kafka's controller
// alterPartitionReassignments): a single node has nowhere to move a replica,
// so the only valid target is the current assignment, [this node], which is
// accepted and changes nothing. Per partition:
//   unknown topic or partition      UNKNOWN_TOPIC_OR_PARTITION
//   Replicas null (cancel)          NO_REASSIGNMENT_IN_PROGRESS (none ever is)
//   Replicas empty, naming another
//   broker or this one twice        INVALID_REPLICA_ASSIGNMENT, with Kafka's
//                                   validateManualPartitionAssignment wording
//                                   (an id no broker has is the same code)
//   Replicas == [this node]         NONE
#include <set>

#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

using PartitionResult = AlterPartitionReassignmentsResponse::Partition;

PartitionResult Reassign(HandlerEnv& env, const std::string& topic,
                         const AlterPartitionReassignmentsRequest::Partition& p) {
  PartitionResult out;
  out.partition_index = p.partition_index;
  auto fail = [&](ErrorCode code, std::string message) {
    out.error_code = code;
    out.error_message = std::move(message);
    return out;
  };
  if (env.topics.GetLog({topic, p.partition_index}) == nullptr) {
    return fail(ErrorCode::kUnknownTopicOrPartition,
                "Unable to find partition " + topic + "-" + std::to_string(p.partition_index));
  }
  if (!p.replicas) {
    return fail(ErrorCode::kNoReassignmentInProgress, "Partition " + topic + "-" +
                                                          std::to_string(p.partition_index) +
                                                          " has no ongoing reassignment.");
  }
  if (p.replicas->empty()) {
    return fail(ErrorCode::kInvalidReplicaAssignment,
                "The manual partition assignment includes an empty replica list.");
  }
  std::set<int32_t> seen;
  for (int32_t id : *p.replicas) {
    if (id != env.ctx.node_id) {
      return fail(ErrorCode::kInvalidReplicaAssignment,
                  "The manual partition assignment includes broker " + std::to_string(id) +
                      ", but no broker with that ID exists.");
    }
    if (!seen.insert(id).second) {
      return fail(ErrorCode::kInvalidReplicaAssignment,
                  "The manual partition assignment includes the broker " + std::to_string(id) +
                      " more than once.");
    }
  }
  return out;  // already assigned exactly so: nothing to do
}

}  // namespace

void HandleAlterPartitionReassignments(HandlerEnv& env, const RequestHeader& header,
                                       ProtocolReader& body, const Respond& respond) {
  Result<AlterPartitionReassignmentsRequest> request =
      DecodeAlterPartitionReassignmentsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  AlterPartitionReassignmentsResponse response;
  for (const auto& t : request->topics) {
    AlterPartitionReassignmentsResponse::Topic out;
    out.name = t.name;
    for (const auto& p : t.partitions) out.partitions.push_back(Reassign(env, t.name, p));
    response.responses.push_back(std::move(out));
  }
  respond(EncodeResponseFrame(env, header, response, EncodeAlterPartitionReassignmentsResponse),
          false);
}

}  // namespace daruma::broker
