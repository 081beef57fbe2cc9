// CreateTopics (key 19), versions 0–4, none flexible (spec §3.7).
//
//   Request:  Topics [Name string, NumPartitions int32, ReplicationFactor
//             int16, Assignments [PartitionIndex int32, BrokerIds []int32],
//             Configs [Name string, Value nullable string]], timeoutMs int32,
//             validateOnly bool (v1+)
//   Response: ThrottleTimeMs int32 (v2+), Topics [Name string, ErrorCode
//             int16, ErrorMessage nullable string (v1+)]
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "broker/protocol/error_codes.h"
#include "broker/protocol/protocol_reader.h"
#include "broker/protocol/protocol_writer.h"
#include "common/status.h"

namespace daruma::broker {

struct CreateTopicsRequest {
  struct Assignment {
    int32_t partition_index = 0;
    std::vector<int32_t> broker_ids;
    bool operator==(const Assignment&) const = default;
  };
  struct Config {
    std::string name;
    std::optional<std::string> value;
    bool operator==(const Config&) const = default;
  };
  struct Topic {
    std::string name;
    int32_t num_partitions = -1;      // -1 = broker default
    int16_t replication_factor = -1;  // -1 = broker default
    std::vector<Assignment> assignments;
    std::vector<Config> configs;
    bool operator==(const Topic&) const = default;
  };
  std::vector<Topic> topics;
  int32_t timeout_ms = 60000;
  bool validate_only = false;  // v1+

  bool operator==(const CreateTopicsRequest&) const = default;
};

struct CreateTopicsResponse {
  struct Topic {
    std::string name;
    ErrorCode error_code = ErrorCode::kNone;
    std::optional<std::string> error_message;  // v1+
    bool operator==(const Topic&) const = default;
  };
  int32_t throttle_time_ms = 0;  // v2+
  std::vector<Topic> topics;

  bool operator==(const CreateTopicsResponse&) const = default;
};

Result<CreateTopicsRequest> DecodeCreateTopicsRequest(ProtocolReader& reader, int16_t version);
void EncodeCreateTopicsResponse(const CreateTopicsResponse& response, int16_t version,
                                ProtocolWriter& writer);
void EncodeCreateTopicsRequest(const CreateTopicsRequest& request, int16_t version,
                               ProtocolWriter& writer);
Result<CreateTopicsResponse> DecodeCreateTopicsResponse(ProtocolReader& reader, int16_t version);

}  // namespace daruma::broker
