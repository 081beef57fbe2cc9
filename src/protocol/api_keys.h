// Kafka API keys, the version ranges this broker advertises, and header
// version selection (spec kafka-protocol-subset.md §1.4, §2.4).
//
// Contract:
// - AdvertisedApis() is the range of versions each API's codecs read, sorted
//   by key; the broker advertises the APIs of its handler table with these
//   ranges (broker/api_handlers.h), so a range here alone switches nothing
//   on. It lists the APIs this broker implements or is implementing (spec
//   §2.3 rule 3); issue 7 covers ApiVersions, Metadata, Produce, Fetch,
//   ListOffsets, CreateTopics, DeleteTopics and DescribeConfigs with the
//   §2.4 ranges; issue 19 adds the admin APIs (DescribeCluster,
//   DescribeLogDirs, CreatePartitions, DeleteRecords, AlterConfigs,
//   IncrementalAlterConfigs, OffsetForLeaderEpoch, DescribeProducers,
//   ElectLeaders and the partition reassignment pair) with the whole range a
//   Kafka 3.9 broker advertises; issues 20-21 the group and idempotence
//   APIs; the transaction APIs (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
//   TxnOffsetCommit, DescribeTransactions, ListTransactions) have their
//   Kafka 3.9 ranges here before their handlers exist, and WriteTxnMarkers
//   (broker-to-broker) a range so that it decodes, though no handler row
//   will advertise it. Every version inside a range has a codec in this
//   directory.
// - Flexibility (compact encodings + tagged fields) is a property of
//   (key, version): version >= the first flexible version of the schema.
// - Request header: v2 when the request version is flexible, else v1.
//   Response header: v1 when flexible, else v0 — except ApiVersions, whose
//   response header is ALWAYS v0 (so a client can read it before it knows
//   what the broker supports). An ApiVersions request v3+ does use header v2.
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "common/status.h"

namespace daruma {

// Every key named in the spec's tables; an ApiKey may also hold any other
// int16 value read off the wire (IsKnownApiKey tells them apart).
enum class ApiKey : int16_t {
  kProduce = 0,
  kFetch = 1,
  kListOffsets = 2,
  kMetadata = 3,
  kOffsetCommit = 8,
  kOffsetFetch = 9,
  kFindCoordinator = 10,
  kJoinGroup = 11,
  kHeartbeat = 12,
  kLeaveGroup = 13,
  kSyncGroup = 14,
  kDescribeGroups = 15,
  kListGroups = 16,
  kSaslHandshake = 17,
  kApiVersions = 18,
  kCreateTopics = 19,
  kDeleteTopics = 20,
  kDeleteRecords = 21,
  kInitProducerId = 22,
  kOffsetForLeaderEpoch = 23,
  kAddPartitionsToTxn = 24,
  kAddOffsetsToTxn = 25,
  kEndTxn = 26,
  kWriteTxnMarkers = 27,
  kTxnOffsetCommit = 28,
  kDescribeConfigs = 32,
  kAlterConfigs = 33,
  kDescribeLogDirs = 35,
  kSaslAuthenticate = 36,
  kCreatePartitions = 37,
  kDeleteGroups = 42,
  kElectLeaders = 43,
  kIncrementalAlterConfigs = 44,
  kAlterPartitionReassignments = 45,
  kListPartitionReassignments = 46,
  kOffsetDelete = 47,
  kDescribeCluster = 60,
  kDescribeProducers = 61,
  kDescribeTransactions = 65,
  kListTransactions = 66,
};

// Field names follow the design note; kNeverFlexible marks schemas with no
// flexible version.
struct ApiVersionRange {
  ApiKey key;
  int16_t min;
  int16_t max;
  int16_t first_flexible;
};

inline constexpr int16_t kNeverFlexible = -1;

// The advertised table (spec §2.4, restricted to implemented APIs), by key.
std::span<const ApiVersionRange> AdvertisedApis();
// The advertised range for `key`, or nullptr when the key is not advertised.
const ApiVersionRange* FindAdvertisedApi(ApiKey key);
// True when `key` is advertised and min <= version <= max.
bool IsSupportedVersion(ApiKey key, int16_t version);

// OK, or kUnsupported: "<Name> version <v> is not supported (advertised
// <min>-<max>)" — what every Decode*(reader, version) returns for a version
// outside the table.
Status CheckSupportedVersion(ApiKey key, int16_t version);

// Kafka schema name ("Produce"), or "Unknown" for keys not in the spec.
const char* ApiKeyName(ApiKey key);
bool IsKnownApiKey(ApiKey key);
// The schema's first flexible version (from the §1.4 table), kNeverFlexible
// for never-flexible or unknown keys.
int16_t FirstFlexibleVersion(ApiKey key);
bool IsFlexible(ApiKey key, int16_t version);
// 1 or 2 (header v0 is never sent by the target clients).
int16_t RequestHeaderVersion(ApiKey key, int16_t version);
// 0 or 1; always 0 for ApiVersions.
int16_t ResponseHeaderVersion(ApiKey key, int16_t version);

}  // namespace daruma
