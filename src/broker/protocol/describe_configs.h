// DescribeConfigs (key 32), versions 0–1, none flexible (spec §3.9).
//
//   Request:  Resources [ResourceType int8, ResourceName string,
//             ConfigurationKeys nullable []string], IncludeSynonyms bool (v1)
//   Response: ThrottleTimeMs int32, Results [ErrorCode int16, ErrorMessage
//             nullable string, ResourceType int8, ResourceName string,
//             Configs [Name string, Value nullable string, ReadOnly bool,
//             IsDefault bool (v0), ConfigSource int8 (v1), IsSensitive bool,
//             Synonyms [Name string, Value nullable string, Source int8]
//             (v1)]]
//
// Constants: resource types 2 TOPIC, 4 BROKER; config sources per §1.5.
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

inline constexpr int8_t kResourceTypeTopic = 2;
inline constexpr int8_t kResourceTypeBroker = 4;

// DescribeConfigs v1 ConfigSource values (§1.5).
enum class ConfigSource : int8_t {
  kUnknown = 0,
  kTopicConfig = 1,
  kDynamicBrokerConfig = 2,
  kDynamicDefaultBrokerConfig = 3,
  kStaticBrokerConfig = 4,
  kDefaultConfig = 5,
  kDynamicBrokerLoggerConfig = 6,
};

struct DescribeConfigsRequest {
  struct Resource {
    int8_t resource_type = kResourceTypeTopic;
    std::string resource_name;
    std::optional<std::vector<std::string>> configuration_keys;  // nullopt = all
    bool operator==(const Resource&) const = default;
  };
  std::vector<Resource> resources;
  bool include_synonyms = false;  // v1

  bool operator==(const DescribeConfigsRequest&) const = default;
};

struct DescribeConfigsResponse {
  struct Synonym {
    std::string name;
    std::optional<std::string> value;
    int8_t source = 0;
    bool operator==(const Synonym&) const = default;
  };
  struct Config {
    std::string name;
    std::optional<std::string> value;
    bool read_only = false;
    bool is_default = false;    // v0
    int8_t config_source = -1;  // v1 (ConfigSource values)
    bool is_sensitive = false;
    std::vector<Synonym> synonyms;  // v1
    bool operator==(const Config&) const = default;
  };
  struct ResourceResult {
    ErrorCode error_code = ErrorCode::kNone;
    std::optional<std::string> error_message;
    int8_t resource_type = kResourceTypeTopic;
    std::string resource_name;
    std::vector<Config> configs;
    bool operator==(const ResourceResult&) const = default;
  };
  int32_t throttle_time_ms = 0;
  std::vector<ResourceResult> results;

  bool operator==(const DescribeConfigsResponse&) const = default;
};

Result<DescribeConfigsRequest> DecodeDescribeConfigsRequest(ProtocolReader& reader,
                                                            int16_t version);
void EncodeDescribeConfigsResponse(const DescribeConfigsResponse& response, int16_t version,
                                   ProtocolWriter& writer);
void EncodeDescribeConfigsRequest(const DescribeConfigsRequest& request, int16_t version,
                                  ProtocolWriter& writer);
Result<DescribeConfigsResponse> DecodeDescribeConfigsResponse(ProtocolReader& reader,
                                                              int16_t version);

}  // namespace daruma::broker
