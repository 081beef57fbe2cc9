// ListOffsets (key 2), versions 1–2, none flexible (spec §3.5).
//
//   Request:  ReplicaId int32, IsolationLevel int8 (v2), Topics [Name string,
//             Partitions [PartitionIndex int32, Timestamp int64]]
//   Response: ThrottleTimeMs int32 (v2), Topics [Name string, Partitions
//             [PartitionIndex int32, ErrorCode int16, Timestamp int64,
//             Offset int64]]
//
// Request Timestamp: -1 latest, -2 earliest, >= 0 first offset at or after.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "broker/protocol/error_codes.h"
#include "broker/protocol/protocol_reader.h"
#include "broker/protocol/protocol_writer.h"
#include "common/status.h"

namespace daruma::broker {

inline constexpr int64_t kListOffsetsLatest = -1;
inline constexpr int64_t kListOffsetsEarliest = -2;

struct ListOffsetsRequest {
  struct Partition {
    int32_t partition_index = 0;
    int64_t timestamp = kListOffsetsLatest;
    bool operator==(const Partition&) const = default;
  };
  struct Topic {
    std::string name;
    std::vector<Partition> partitions;
    bool operator==(const Topic&) const = default;
  };
  int32_t replica_id = -1;
  int8_t isolation_level = 0;  // v2
  std::vector<Topic> topics;

  bool operator==(const ListOffsetsRequest&) const = default;
};

struct ListOffsetsResponse {
  struct Partition {
    int32_t partition_index = 0;
    ErrorCode error_code = ErrorCode::kNone;
    int64_t timestamp = -1;
    int64_t offset = -1;
    bool operator==(const Partition&) const = default;
  };
  struct Topic {
    std::string name;
    std::vector<Partition> partitions;
    bool operator==(const Topic&) const = default;
  };
  int32_t throttle_time_ms = 0;  // v2
  std::vector<Topic> topics;

  bool operator==(const ListOffsetsResponse&) const = default;
};

Result<ListOffsetsRequest> DecodeListOffsetsRequest(ProtocolReader& reader, int16_t version);
void EncodeListOffsetsResponse(const ListOffsetsResponse& response, int16_t version,
                               ProtocolWriter& writer);
void EncodeListOffsetsRequest(const ListOffsetsRequest& request, int16_t version,
                              ProtocolWriter& writer);
Result<ListOffsetsResponse> DecodeListOffsetsResponse(ProtocolReader& reader, int16_t version);

}  // namespace daruma::broker
