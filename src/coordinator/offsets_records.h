// The records of `__consumer_offsets`, byte for byte as Kafka's group
// coordinator writes and reads them (Kafka's OffsetCommitKey/Value and
// GroupMetadataKey/Value message definitions; spec §6), so Kafka's own tools
// and `daruma dump --offsets-decoder` read what Daruma writes, and Daruma
// loads what a Kafka broker left.
//
// Key: int16 version, then
//   0, 1  OffsetCommitKey     group, topic STRING, partition INT32
//   2     GroupMetadataKey    group STRING
// (other versions are KIP-848 / share-group records, which this coordinator
// skips). Value: int16 version, then the value struct of that version;
// flexible (compact strings, tagged fields) from version 4. A null value is a
// tombstone: the offset or the group was deleted.
//
// Writing follows Kafka 3.x/4.0: offset values are version 3 (version 1 when
// an expire timestamp is set, for OffsetCommit v2-v4's retention time) and
// group values version 3; keys are versions 1 and 2.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "common/bytes.h"
#include "common/status.h"

namespace daruma {

inline constexpr int16_t kOffsetCommitKeyVersion = 1;
inline constexpr int16_t kGroupMetadataKeyVersion = 2;

struct OffsetCommitKey {
  std::string group;
  std::string topic;
  int32_t partition = 0;
};

struct GroupMetadataKey {
  std::string group;
};

// A key this coordinator does not handle (a KIP-848 or share-group record):
// the loader skips it.
struct OtherRecordKey {
  int16_t version = 0;
};

using OffsetsRecordKey = std::variant<OffsetCommitKey, GroupMetadataKey, OtherRecordKey>;

struct OffsetCommitValue {
  int64_t offset = 0;
  int32_t leader_epoch = -1;  // v3+
  std::string metadata;
  int64_t commit_timestamp = 0;
  int64_t expire_timestamp = -1;  // v1 only
};

struct GroupMemberValue {
  std::string member_id;
  std::optional<std::string> group_instance_id;  // v3+
  std::string client_id;
  std::string client_host;
  int32_t rebalance_timeout = -1;  // v1+ (v0: the session timeout)
  int32_t session_timeout = 0;
  Bytes subscription;
  Bytes assignment;
};

struct GroupMetadataValue {
  std::string protocol_type;
  int32_t generation = 0;
  std::optional<std::string> protocol;
  std::optional<std::string> leader;
  int64_t current_state_timestamp = -1;  // v2+
  std::vector<GroupMemberValue> members;
};

Bytes EncodeOffsetCommitKey(const OffsetCommitKey& key);
Bytes EncodeGroupMetadataKey(const GroupMetadataKey& key);
// Version 3, or 1 when value.expire_timestamp != -1.
Bytes EncodeOffsetCommitValue(const OffsetCommitValue& value);
Bytes EncodeGroupMetadataValue(const GroupMetadataValue& value);

// kCorruption naming the field and byte position when the bytes do not
// parse or have bytes left over.
Result<OffsetsRecordKey> DecodeOffsetsRecordKey(ByteSpan key);
Result<OffsetCommitValue> DecodeOffsetCommitValue(ByteSpan value);
Result<GroupMetadataValue> DecodeGroupMetadataValue(ByteSpan value);

// The `__consumer_offsets` partition of a group: Kafka's
// Utils.abs(groupId.hashCode()) % partitions, with Java's String.hashCode
// over the UTF-16 code units of the id (invalid UTF-8 bytes count as U+FFFD,
// as Java's decoder would make them).
int32_t OffsetsPartitionFor(std::string_view group_id, int32_t partitions);

// The topics of a consumer-protocol subscription (ConsumerProtocolSubscription
// v0-3: int16 version, then the topics array first); nullopt when the bytes
// do not parse. OffsetDelete asks whether a member still subscribes to a topic.
std::optional<std::vector<std::string>> ConsumerSubscriptionTopics(ByteSpan subscription);

}  // namespace daruma
