#include "protocol/api_keys.h"

#include <fmt/format.h>

#include <array>
#include <optional>

#include "protocol/generated/api_schemas.h"

namespace daruma {
namespace {

// The first flexible version of an API with a schema (kApiSchemas, generated
// from src/protocol/schemas), so the two tables cannot disagree.
constexpr int16_t SchemaFlexible(ApiKey key) {
  for (const ApiSchema& schema : kApiSchemas) {
    if (schema.key == int16_t(key)) return schema.first_flexible;
  }
  return kNeverFlexible;
}

// The versions a Kafka 3.9 / 4.0 broker advertises for each implemented API,
// from the oldest any client in our tests still sends (Produce v0, Metadata
// v0 and ListOffsets v1 by kafka-python 2.0; Fetch v4 is the oldest with
// isolation levels, which librdkafka and kafka-python both exceed), by key.
constexpr std::array<ApiVersionRange, 38> kAdvertised = {{
    {ApiKey::kProduce, 0, 11, SchemaFlexible(ApiKey::kProduce)},
    {ApiKey::kFetch, 4, 17, SchemaFlexible(ApiKey::kFetch)},
    {ApiKey::kListOffsets, 1, 10, SchemaFlexible(ApiKey::kListOffsets)},
    {ApiKey::kMetadata, 0, 12, SchemaFlexible(ApiKey::kMetadata)},
    // Consumer groups (issue 21): every version Kafka 3.9 advertises (4.0
    // drops OffsetCommit v0-1, OffsetFetch v0 and JoinGroup v0-1, KIP-896;
    // kafka-python 2.0 still sends OffsetCommit v2 and JoinGroup v0-2).
    {ApiKey::kOffsetCommit, 0, 9, SchemaFlexible(ApiKey::kOffsetCommit)},
    {ApiKey::kOffsetFetch, 0, 9, SchemaFlexible(ApiKey::kOffsetFetch)},
    // librdkafka enables LZ4 only when FindCoordinator is advertised (§2.1).
    {ApiKey::kFindCoordinator, 0, 6, SchemaFlexible(ApiKey::kFindCoordinator)},
    {ApiKey::kJoinGroup, 0, 9, SchemaFlexible(ApiKey::kJoinGroup)},
    {ApiKey::kHeartbeat, 0, 4, SchemaFlexible(ApiKey::kHeartbeat)},
    {ApiKey::kLeaveGroup, 0, 5, SchemaFlexible(ApiKey::kLeaveGroup)},
    {ApiKey::kSyncGroup, 0, 5, SchemaFlexible(ApiKey::kSyncGroup)},
    {ApiKey::kDescribeGroups, 0, 5, SchemaFlexible(ApiKey::kDescribeGroups)},
    {ApiKey::kListGroups, 0, 5, SchemaFlexible(ApiKey::kListGroups)},
    {ApiKey::kApiVersions, 0, 4, SchemaFlexible(ApiKey::kApiVersions)},
    {ApiKey::kCreateTopics, 0, 7, SchemaFlexible(ApiKey::kCreateTopics)},
    {ApiKey::kDeleteTopics, 0, 6, SchemaFlexible(ApiKey::kDeleteTopics)},
    // The admin APIs (issue 19) with every version Kafka 3.9 advertises (4.0
    // drops DescribeLogDirs v0 and OffsetForLeaderEpoch v0-1, KIP-896).
    {ApiKey::kDeleteRecords, 0, 2, SchemaFlexible(ApiKey::kDeleteRecords)},
    // Idempotent producers (issue 20); transactional ids wait for the
    // transaction coordinator.
    {ApiKey::kInitProducerId, 0, 5, SchemaFlexible(ApiKey::kInitProducerId)},
    {ApiKey::kOffsetForLeaderEpoch, 0, 4, SchemaFlexible(ApiKey::kOffsetForLeaderEpoch)},
    // Transactions: every version Kafka 3.9 has. Kafka 4.0 adds EndTxn v5 and
    // TxnOffsetCommit v5 for transaction version 2 (KIP-890 part 2), which
    // Daruma does not implement. WriteTxnMarkers is broker-to-broker: its
    // codec reads, but it gets no handler row, so it is never advertised.
    {ApiKey::kAddPartitionsToTxn, 0, 5, SchemaFlexible(ApiKey::kAddPartitionsToTxn)},
    {ApiKey::kAddOffsetsToTxn, 0, 4, SchemaFlexible(ApiKey::kAddOffsetsToTxn)},
    {ApiKey::kEndTxn, 0, 4, SchemaFlexible(ApiKey::kEndTxn)},
    {ApiKey::kWriteTxnMarkers, 0, 1, SchemaFlexible(ApiKey::kWriteTxnMarkers)},
    {ApiKey::kTxnOffsetCommit, 0, 4, SchemaFlexible(ApiKey::kTxnOffsetCommit)},
    {ApiKey::kDescribeConfigs, 0, 4, SchemaFlexible(ApiKey::kDescribeConfigs)},
    {ApiKey::kAlterConfigs, 0, 2, SchemaFlexible(ApiKey::kAlterConfigs)},
    {ApiKey::kDescribeLogDirs, 0, 4, SchemaFlexible(ApiKey::kDescribeLogDirs)},
    {ApiKey::kCreatePartitions, 0, 3, SchemaFlexible(ApiKey::kCreatePartitions)},
    {ApiKey::kDeleteGroups, 0, 2, SchemaFlexible(ApiKey::kDeleteGroups)},
    {ApiKey::kElectLeaders, 0, 2, SchemaFlexible(ApiKey::kElectLeaders)},
    {ApiKey::kIncrementalAlterConfigs, 0, 1, SchemaFlexible(ApiKey::kIncrementalAlterConfigs)},
    {ApiKey::kAlterPartitionReassignments, 0, 0,
     SchemaFlexible(ApiKey::kAlterPartitionReassignments)},
    {ApiKey::kListPartitionReassignments, 0, 0,
     SchemaFlexible(ApiKey::kListPartitionReassignments)},
    {ApiKey::kOffsetDelete, 0, 0, SchemaFlexible(ApiKey::kOffsetDelete)},
    {ApiKey::kDescribeCluster, 0, 1, SchemaFlexible(ApiKey::kDescribeCluster)},
    {ApiKey::kDescribeProducers, 0, 0, SchemaFlexible(ApiKey::kDescribeProducers)},
    {ApiKey::kDescribeTransactions, 0, 0, SchemaFlexible(ApiKey::kDescribeTransactions)},
    {ApiKey::kListTransactions, 0, 1, SchemaFlexible(ApiKey::kListTransactions)},
}};
static_assert(kAdvertised[0].first_flexible == 9, "Produce is flexible from v9");

struct KeyInfo {
  ApiKey key;
  const char* name;
  int16_t first_flexible;
};

// The keys of the spec's §1.4 table that have no schema yet; the ones with a
// schema take their name and flexibility from kApiSchemas.
constexpr std::array<KeyInfo, 2> kKeysWithoutSchema = {{
    {ApiKey::kSaslHandshake, "SaslHandshake", kNeverFlexible},
    {ApiKey::kSaslAuthenticate, "SaslAuthenticate", 2},
}};

std::optional<KeyInfo> FindKey(ApiKey key) {
  for (const ApiSchema& schema : kApiSchemas) {
    if (schema.key == int16_t(key)) return KeyInfo{key, schema.name, schema.first_flexible};
  }
  for (const KeyInfo& info : kKeysWithoutSchema) {
    if (info.key == key) return info;
  }
  return std::nullopt;
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
  std::optional<KeyInfo> info = FindKey(key);
  return info ? info->name : "Unknown";
}

bool IsKnownApiKey(ApiKey key) {
  return FindKey(key).has_value();
}

int16_t FirstFlexibleVersion(ApiKey key) {
  std::optional<KeyInfo> info = FindKey(key);
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

}  // namespace daruma
