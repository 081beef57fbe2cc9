// FindCoordinator (key 10), versions 0–2, none flexible (spec §3.6).
//
//   Request:  Key string, KeyType int8 (v1+)
//   Response: ThrottleTimeMs int32 (v1+), ErrorCode int16, ErrorMessage
//             nullable string (v1+), NodeId int32, Host string, Port int32
//
// Advertised even before groups exist: librdkafka enables LZ4 only for a
// broker that advertises FindCoordinator (spec §2.1).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "broker/protocol/error_codes.h"
#include "broker/protocol/protocol_reader.h"
#include "broker/protocol/protocol_writer.h"
#include "common/status.h"

namespace daruma::broker {

inline constexpr int8_t kCoordinatorKeyTypeGroup = 0;
inline constexpr int8_t kCoordinatorKeyTypeTransaction = 1;

struct FindCoordinatorRequest {
  std::string key;
  int8_t key_type = kCoordinatorKeyTypeGroup;  // v1+

  bool operator==(const FindCoordinatorRequest&) const = default;
};

struct FindCoordinatorResponse {
  int32_t throttle_time_ms = 0;  // v1+
  ErrorCode error_code = ErrorCode::kNone;
  std::optional<std::string> error_message;  // v1+
  int32_t node_id = -1;
  std::string host;
  int32_t port = -1;

  bool operator==(const FindCoordinatorResponse&) const = default;
};

Result<FindCoordinatorRequest> DecodeFindCoordinatorRequest(ProtocolReader& reader,
                                                            int16_t version);
void EncodeFindCoordinatorResponse(const FindCoordinatorResponse& response, int16_t version,
                                   ProtocolWriter& writer);
void EncodeFindCoordinatorRequest(const FindCoordinatorRequest& request, int16_t version,
                                  ProtocolWriter& writer);
Result<FindCoordinatorResponse> DecodeFindCoordinatorResponse(ProtocolReader& reader,
                                                              int16_t version);

}  // namespace daruma::broker
