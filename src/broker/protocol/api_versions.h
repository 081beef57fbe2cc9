// ApiVersions (key 18), versions 0–3; v3 is flexible (spec §3.1).
//
//   Request  v3:   ClientSoftwareName compact string, ClientSoftwareVersion
//                  compact string, tagged fields. v0–2: empty body.
//   Response v0:   ErrorCode int16, ApiKeys [ApiKey int16, MinVersion int16,
//                  MaxVersion int16]
//   Response v1–2: v0 + ThrottleTimeMs int32
//   Response v3:   compact ApiKeys array, each entry + tagged fields,
//                  ThrottleTimeMs, body tagged fields (tags 0–3:
//                  SupportedFeatures, FinalizedFeaturesEpoch,
//                  FinalizedFeatures, ZkMigrationReady — skipped on read,
//                  never written).
//
// Quirks the handler owns: the response header is always v0; a request with
// version > 3 is answered with ErrorCode UNSUPPORTED_VERSION (35) and the full
// key list ENCODED AS v0, without decoding its body (DecodeApiVersionsRequest
// rejects such versions).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "broker/protocol/api_keys.h"
#include "broker/protocol/error_codes.h"
#include "broker/protocol/protocol_reader.h"
#include "broker/protocol/protocol_writer.h"
#include "common/status.h"

namespace daruma::broker {

struct ApiVersionsRequest {
  std::string client_software_name;     // v3+
  std::string client_software_version;  // v3+

  bool operator==(const ApiVersionsRequest&) const = default;
};

struct ApiVersionsResponse {
  struct Key {
    ApiKey api_key = ApiKey::kProduce;
    int16_t min_version = 0;
    int16_t max_version = 0;
    bool operator==(const Key&) const = default;
  };
  ErrorCode error_code = ErrorCode::kNone;
  std::vector<Key> api_keys;
  int32_t throttle_time_ms = 0;  // v1+

  bool operator==(const ApiVersionsResponse&) const = default;
};

// The §2.4 table (AdvertisedApis()) as response entries, sorted by key.
std::vector<ApiVersionsResponse::Key> AdvertisedApiKeys();

Result<ApiVersionsRequest> DecodeApiVersionsRequest(ProtocolReader& reader, int16_t version);
void EncodeApiVersionsResponse(const ApiVersionsResponse& response, int16_t version,
                               ProtocolWriter& writer);
void EncodeApiVersionsRequest(const ApiVersionsRequest& request, int16_t version,
                              ProtocolWriter& writer);
Result<ApiVersionsResponse> DecodeApiVersionsResponse(ProtocolReader& reader, int16_t version);

}  // namespace daruma::broker
