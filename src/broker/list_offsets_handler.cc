// ListOffsets (spec §3.5, §5.6): earliest (-2) = log start, latest (-1) =
// high watermark (v1, READ_UNCOMMITTED) or last stable offset (v2
// READ_COMMITTED), a timestamp = the first offset at or after it below that
// same bound. The special timestamps of later versions: max timestamp (-3,
// v7+) = the first record with the log's largest timestamp; earliest local
// (-4, v8+) = the log start (every byte is local: Daruma has no tiered
// storage); latest tiered (-5, v9+) = offset -1 (nothing is tiered). One
// below its version, or any other negative one, is UNSUPPORTED_VERSION for
// that partition, as Kafka's ReplicaManager.isListOffsetsTimestampUnsupported
// answers.
#include <map>
#include <optional>

#include "broker/api_handlers.h"
#include "log/leader_epoch.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

// The first ListOffsets version that knows a special (negative) timestamp;
// nullopt for one no version knows.
std::optional<int16_t> FirstVersionKnowing(int64_t timestamp) {
  switch (timestamp) {
    case kListOffsetsEarliest:
    case kListOffsetsLatest:
      return 1;
    case kListOffsetsMaxTimestamp:
      return 7;
    case kListOffsetsEarliestLocal:
      return 8;
    case kListOffsetsLatestTiered:
      return 9;
    default:
      return std::nullopt;
  }
}

bool TimestampUnsupported(int64_t timestamp, int16_t version) {
  if (timestamp >= 0) return false;
  const std::optional<int16_t> first = FirstVersionKnowing(timestamp);
  return !first || version < *first;
}

ListOffsetsResponse::Partition LookUp(HandlerEnv& env, const std::string& topic,
                                      const ListOffsetsRequest::Partition& p, bool committed) {
  ListOffsetsResponse::Partition out;
  out.partition_index = p.partition_index;
  Log* log = env.topics.ServedLog({topic, p.partition_index}, &out.error_code);
  if (log == nullptr) return out;
  const int64_t bound = committed ? log->last_stable_offset() : log->high_watermark();
  if (p.timestamp == kListOffsetsEarliest) {
    out.offset = log->log_start_offset();
    out.leader_epoch = EpochAtOffset(*log, out.offset);
  } else if (p.timestamp == kListOffsetsLatest) {
    out.offset = bound;
    out.leader_epoch = LeaderEpochOf(*log);
  } else if (p.timestamp == kListOffsetsEarliestLocal) {
    out.offset = log->log_start_offset();
    out.leader_epoch = EpochAtOffset(*log, out.offset);
  } else if (p.timestamp == kListOffsetsLatestTiered) {
    out.offset = -1;
  } else {
    auto found = p.timestamp == kListOffsetsMaxTimestamp ? log->FetchMaxTimestampOffset()
                                                         : log->FetchOffsetByTimestamp(p.timestamp);
    if (!found.ok()) {
      out.error_code =
          ErrorCodeForLogRead(env.topics, {topic, p.partition_index}, log, found.status());
    } else if (*found && (*found)->second < bound) {
      out.timestamp = (*found)->first;
      out.offset = (*found)->second;
      out.leader_epoch = EpochAtOffset(*log, out.offset);
    }
  }
  return out;
}

}  // namespace

void HandleListOffsets(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                       const Respond& respond) {
  Result<ListOffsetsRequest> request = DecodeListOffsetsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  const bool committed = header.api_version >= 2 && request->isolation_level == 1;
  // Kafka answers INVALID_REQUEST for a partition named twice in one request.
  std::map<TopicPartition, int> seen;
  for (const auto& topic : request->topics) {
    for (const auto& p : topic.partitions) seen[{topic.name, p.partition_index}]++;
  }
  ListOffsetsResponse response;
  for (const auto& topic : request->topics) {
    ListOffsetsResponse::Topic t;
    t.name = topic.name;
    for (const auto& p : topic.partitions) {
      if (seen[{topic.name, p.partition_index}] > 1) {
        ListOffsetsResponse::Partition dup;
        dup.partition_index = p.partition_index;
        dup.error_code = ErrorCode::kInvalidRequest;
        t.partitions.push_back(dup);
        continue;
      }
      if (TimestampUnsupported(p.timestamp, header.api_version)) {
        ListOffsetsResponse::Partition unsupported;
        unsupported.partition_index = p.partition_index;
        unsupported.error_code = ErrorCode::kUnsupportedVersion;
        t.partitions.push_back(unsupported);
        continue;
      }
      t.partitions.push_back(LookUp(env, topic.name, p, committed));
    }
    response.topics.push_back(std::move(t));
  }
  respond(EncodeResponseFrame(env, header, response, EncodeListOffsetsResponse), false);
}

}  // namespace daruma::broker
