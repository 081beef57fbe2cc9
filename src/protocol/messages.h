// Every Kafka message this broker speaks, as structs generated from
// src/protocol/schemas (protocol/generated/*.h), plus the wire constants
// their fields carry. Include this rather than a generated header.
//
// Each message Foo has Foo::Read(reader, version) / Write(writer, version)
// for every version of its schema, and DecodeFoo(reader, version) (checks the
// version is ADVERTISED, names the message in errors) / EncodeFoo(message,
// version, writer). Views and ownership: see protocol/message_support.h.
#pragma once

#include <cstdint>
#include <vector>

#include "protocol/api_keys.h"
#include "protocol/error_codes.h"
#include "protocol/generated/messages.h"

namespace daruma {

// ListOffsets request Timestamp: -1 latest, -2 earliest, >= 0 the first
// offset at or after it.
inline constexpr int64_t kListOffsetsLatest = -1;
inline constexpr int64_t kListOffsetsEarliest = -2;
inline constexpr int64_t kListOffsetsMaxTimestamp = -3;   // v7+
inline constexpr int64_t kListOffsetsEarliestLocal = -4;  // v8+ (KIP-405)
inline constexpr int64_t kListOffsetsLatestTiered = -5;   // v9+ (KIP-1005)

// DescribeConfigs ResourceType.
inline constexpr int8_t kResourceTypeTopic = 2;
inline constexpr int8_t kResourceTypeBroker = 4;

// DescribeConfigs v1+ ConfigSource values (§1.5).
enum class ConfigSource : int8_t {
  kUnknown = 0,
  kTopicConfig = 1,
  kDynamicBrokerConfig = 2,
  kDynamicDefaultBrokerConfig = 3,
  kStaticBrokerConfig = 4,
  kDefaultConfig = 5,
  kDynamicBrokerLoggerConfig = 6,
};

// DescribeConfigs v3+ ConfigType values (Kafka's ConfigDef.Type).
enum class ConfigType : int8_t {
  kUnknown = 0,
  kBoolean = 1,
  kString = 2,
  kInt = 3,
  kShort = 4,
  kLong = 5,
  kDouble = 6,
  kList = 7,
  kClass = 8,
  kPassword = 9,
};

// FindCoordinator KeyType.
inline constexpr int8_t kCoordinatorKeyTypeGroup = 0;
inline constexpr int8_t kCoordinatorKeyTypeTransaction = 1;

// The §2.4 table (AdvertisedApis()) as ApiVersions response entries, by key.
std::vector<ApiVersionsResponse::Key> AdvertisedApiKeys();

}  // namespace daruma
