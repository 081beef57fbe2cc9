// ElectLeaders (KIP-183, KIP-460; Kafka's controller electLeaders): this node
// is the only replica and leads every partition, so no election is ever
// needed. Per partition:
//   existing partition           ELECTION_NOT_NEEDED (every version: Kafka's
//                                controller answers it for v0 too; v0 only
//                                lacks the top-level error code)
//   unknown topic or partition   UNKNOWN_TOPIC_OR_PARTITION
// Null TopicPartitions means every partition, and then Kafka leaves out the
// partitions that needed no election: the answer is empty. An ElectionType
// other than 0 (PREFERRED) or 1 (UNCLEAN) is INVALID_REQUEST, at the top
// level (v1+) and for every partition named.
#include <map>

#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

constexpr int8_t kElectionPreferred = 0;
constexpr int8_t kElectionUnclean = 1;

using ElectResult = ElectLeadersResponse::Partition;

ElectResult Elect(HandlerEnv& env, const std::string& topic, int32_t partition) {
  ElectResult out;
  out.partition_id = partition;
  if (env.topics.GetLog({topic, partition}) == nullptr) {
    out.error_code = ErrorCode::kUnknownTopicOrPartition;
    out.error_message = "The partition does not exist.";
  } else {
    out.error_code = ErrorCode::kElectionNotNeeded;
    out.error_message = "Leader election not needed for topic partition.";
  }
  return out;
}

}  // namespace

void HandleElectLeaders(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond) {
  Result<ElectLeadersRequest> request = DecodeElectLeadersRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  ElectLeadersResponse response;
  // Null: every partition, of which none needs an election (see above).
  if (!request->topic_partitions) {
    respond(EncodeResponseFrame(env, header, response, EncodeElectLeadersResponse), false);
    return;
  }
  const int8_t type = request->election_type;
  const bool valid_type = type == kElectionPreferred || type == kElectionUnclean;
  if (!valid_type) response.error_code = ErrorCode::kInvalidRequest;
  // Kafka groups the results by topic: one entry per topic named.
  std::map<std::string, size_t> index;
  for (const auto& t : *request->topic_partitions) {
    auto [it, added] = index.emplace(t.topic, response.replica_election_results.size());
    if (added) response.replica_election_results.push_back({.topic = t.topic});
    auto& results = response.replica_election_results[it->second].partition_result;
    for (int32_t p : t.partitions) {
      if (valid_type) {
        results.push_back(Elect(env, t.topic, p));
      } else {
        results.push_back({.partition_id = p,
                           .error_code = ErrorCode::kInvalidRequest,
                           .error_message = "Unknown election type " + std::to_string(int(type))});
      }
    }
  }
  respond(EncodeResponseFrame(env, header, response, EncodeElectLeadersResponse), false);
}

}  // namespace daruma::broker
