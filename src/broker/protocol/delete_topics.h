// DeleteTopics (key 20), versions 0–1, none flexible (spec §3.8).
//
//   Request:  TopicNames []string, TimeoutMs int32
//   Response: ThrottleTimeMs int32 (v1), Responses [Name string,
//             ErrorCode int16]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "broker/protocol/error_codes.h"
#include "broker/protocol/protocol_reader.h"
#include "broker/protocol/protocol_writer.h"
#include "common/status.h"

namespace daruma::broker {

struct DeleteTopicsRequest {
  std::vector<std::string> topic_names;
  int32_t timeout_ms = 0;

  bool operator==(const DeleteTopicsRequest&) const = default;
};

struct DeleteTopicsResponse {
  struct TopicResult {
    std::string name;
    ErrorCode error_code = ErrorCode::kNone;
    bool operator==(const TopicResult&) const = default;
  };
  int32_t throttle_time_ms = 0;  // v1
  std::vector<TopicResult> responses;

  bool operator==(const DeleteTopicsResponse&) const = default;
};

Result<DeleteTopicsRequest> DecodeDeleteTopicsRequest(ProtocolReader& reader, int16_t version);
void EncodeDeleteTopicsResponse(const DeleteTopicsResponse& response, int16_t version,
                                ProtocolWriter& writer);
void EncodeDeleteTopicsRequest(const DeleteTopicsRequest& request, int16_t version,
                               ProtocolWriter& writer);
Result<DeleteTopicsResponse> DecodeDeleteTopicsResponse(ProtocolReader& reader, int16_t version);

}  // namespace daruma::broker
