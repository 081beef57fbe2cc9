// OffsetForLeaderEpoch (Kafka's Partition.lastOffsetForLeaderEpoch): the end
// offset of the requested epoch from the partition's leader-epoch cache
// (Log::EndOffsetForEpoch, Kafka's endOffsetFor rules):
//   the latest epoch              (epoch, log end offset)
//   between two known epochs      (largest known epoch <= it, start of the next)
//   below every known epoch       (requested, start of the first known)
//   UNDEFINED (-1) or above all   (-1, -1), error NONE
// This node leads a partition at its newest cached epoch, 0 without one
// (leader_epoch.h). Kafka assigns the leader's epoch at the log end when it
// becomes leader, so a log nothing was appended to still knows epoch 0
// there: an empty cache answers epoch 0 with (0, log end offset), as Kafka
// would.
//
// CurrentLeaderEpoch (v2+) is checked exactly as Fetch checks it
// (fetch_handler.cc): one below this node's epoch is FENCED_LEADER_EPOCH, one
// above it UNKNOWN_LEADER_EPOCH, a negative one (-1, "unknown") skips the
// check.
// ReplicaId (v3+) is ignored, as Kafka 3.9 ignores it: every request is
// answered from the leader's cache, so a non-replica id >= 0 gets the same
// answer as a consumer (Kafka only authorizes it differently).
// Unknown topic or partition: UNKNOWN_TOPIC_OR_PARTITION.
#include "broker/api_handlers.h"
#include "log/leader_epoch.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

using EpochResult = OffsetForLeaderEpochResponse::Partition;

EpochResult EndOffsetFor(HandlerEnv& env, const std::string& topic,
                         const OffsetForLeaderEpochRequest::Partition& p) {
  EpochResult out;
  out.partition = p.partition;
  Log* log = env.topics.ServedLog({topic, p.partition}, &out.error_code);
  if (log == nullptr) return out;
  const int32_t this_epoch = LeaderEpochOf(*log);
  if (p.current_leader_epoch >= 0 && p.current_leader_epoch < this_epoch) {
    out.error_code = ErrorCode::kFencedLeaderEpoch;
    return out;
  }
  if (p.current_leader_epoch > this_epoch) {
    out.error_code = ErrorCode::kUnknownLeaderEpoch;
    return out;
  }
  if (p.leader_epoch == this_epoch && log->leader_epochs().empty()) {
    out.leader_epoch = this_epoch;
    out.end_offset = log->log_end_offset();
    return out;
  }
  const EpochEntry found = log->EndOffsetForEpoch(p.leader_epoch);
  out.leader_epoch = found.first;
  out.end_offset = found.second;
  return out;
}

}  // namespace

void HandleOffsetForLeaderEpoch(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                                const Respond& respond) {
  Result<OffsetForLeaderEpochRequest> request =
      DecodeOffsetForLeaderEpochRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  OffsetForLeaderEpochResponse response;
  for (const auto& t : request->topics) {
    OffsetForLeaderEpochResponse::Topic out;
    out.topic = t.topic;
    for (const auto& p : t.partitions) out.partitions.push_back(EndOffsetFor(env, t.topic, p));
    response.topics.push_back(std::move(out));
  }
  respond(EncodeResponseFrame(env, header, response, EncodeOffsetForLeaderEpochResponse), false);
}

}  // namespace daruma::broker
