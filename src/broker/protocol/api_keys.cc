#include "broker/protocol/api_keys.h"

#include <fmt/format.h>

#include <array>

namespace daruma::broker {
namespace {

// Spec §2.4 ranges for the implemented APIs; first flexible versions from the
// §1.4 table (none of these is flexible inside its range except ApiVersions v3).
constexpr std::array<ApiVersionRange, 9> kAdvertised = {{
    {ApiKey::kProduce, 0, 7, 9},
    {ApiKey::kFetch, 4, 11, 12},
    {ApiKey::kListOffsets, 1, 2, 6},
    {ApiKey::kMetadata, 0, 4, 9},
    // librdkafka enables LZ4 only when FindCoordinator is advertised (§2.1).
    {ApiKey::kFindCoordinator, 0, 2, 3},
    {ApiKey::kApiVersions, 0, 3, 3},
    {ApiKey::kCreateTopics, 0, 4, 5},
    {ApiKey::kDeleteTopics, 0, 1, 4},
    {ApiKey::kDescribeConfigs, 0, 1, 4},
}};

struct KeyInfo {
  ApiKey key;
  const char* name;
  int16_t first_flexible;
};

// Every key of the spec's §1.4 table.
constexpr std::array<KeyInfo, 24> kKnownKeys = {{
    {ApiKey::kProduce, "Produce", 9},
    {ApiKey::kFetch, "Fetch", 12},
    {ApiKey::kListOffsets, "ListOffsets", 6},
    {ApiKey::kMetadata, "Metadata", 9},
    {ApiKey::kOffsetCommit, "OffsetCommit", 8},
    {ApiKey::kOffsetFetch, "OffsetFetch", 6},
    {ApiKey::kFindCoordinator, "FindCoordinator", 3},
    {ApiKey::kJoinGroup, "JoinGroup", 6},
    {ApiKey::kHeartbeat, "Heartbeat", 4},
    {ApiKey::kLeaveGroup, "LeaveGroup", 4},
    {ApiKey::kSyncGroup, "SyncGroup", 4},
    {ApiKey::kDescribeGroups, "DescribeGroups", 5},
    {ApiKey::kListGroups, "ListGroups", 3},
    {ApiKey::kSaslHandshake, "SaslHandshake", kNeverFlexible},
    {ApiKey::kApiVersions, "ApiVersions", 3},
    {ApiKey::kCreateTopics, "CreateTopics", 5},
    {ApiKey::kDeleteTopics, "DeleteTopics", 4},
    {ApiKey::kInitProducerId, "InitProducerId", 2},
    {ApiKey::kAddPartitionsToTxn, "AddPartitionsToTxn", 3},
    {ApiKey::kAddOffsetsToTxn, "AddOffsetsToTxn", 3},
    {ApiKey::kEndTxn, "EndTxn", 3},
    {ApiKey::kTxnOffsetCommit, "TxnOffsetCommit", 3},
    {ApiKey::kDescribeConfigs, "DescribeConfigs", 4},
    {ApiKey::kSaslAuthenticate, "SaslAuthenticate", 2},
}};

const KeyInfo* FindKey(ApiKey key) {
  for (const KeyInfo& info : kKnownKeys) {
    if (info.key == key) return &info;
  }
  return nullptr;
}

}  // namespace

std::span<const ApiVersionRange> AdvertisedApis() {
  return kAdvertised;
}

const ApiVersionRange* FindAdvertisedApi(ApiKey key) {
  for (const ApiVersionRange& range : kAdvertised) {
    if (range.key == key) return &range;
  }
  return nullptr;
}

bool IsSupportedVersion(ApiKey key, int16_t version) {
  const ApiVersionRange* range = FindAdvertisedApi(key);
  return range != nullptr && version >= range->min && version <= range->max;
}

Status CheckSupportedVersion(ApiKey key, int16_t version) {
  const ApiVersionRange* range = FindAdvertisedApi(key);
  if (range == nullptr) {
    return Status::Unsupported(
        fmt::format("API key {} ({}) is not supported", int16_t(key), ApiKeyName(key)));
  }
  if (version < range->min || version > range->max) {
    return Status::Unsupported(fmt::format("{} version {} is not supported (advertised {}-{})",
                                           ApiKeyName(key), version, range->min, range->max));
  }
  return Status::Ok();
}

const char* ApiKeyName(ApiKey key) {
  const KeyInfo* info = FindKey(key);
  return info ? info->name : "Unknown";
}

bool IsKnownApiKey(ApiKey key) {
  return FindKey(key) != nullptr;
}

int16_t FirstFlexibleVersion(ApiKey key) {
  const KeyInfo* info = FindKey(key);
  return info ? info->first_flexible : kNeverFlexible;
}

bool IsFlexible(ApiKey key, int16_t version) {
  int16_t first = FirstFlexibleVersion(key);
  return first != kNeverFlexible && version >= first;
}

int16_t RequestHeaderVersion(ApiKey key, int16_t version) {
  return IsFlexible(key, version) ? 2 : 1;
}

int16_t ResponseHeaderVersion(ApiKey key, int16_t version) {
  if (key == ApiKey::kApiVersions) return 0;
  return IsFlexible(key, version) ? 1 : 0;
}

}  // namespace daruma::broker
