// The `__consumer_offsets` records of KIP-848's consumer groups (record
// types 3-8, Kafka 3.7+) as kafka-dump-log's --offsets-decoder prints them:
// the generated JSON converters' fields, camelCase, in schema order.
//
//   3 ConsumerGroupMetadataKey {groupId}                 Value {epoch}
//   4 ConsumerGroupPartitionMetadataKey {groupId}        Value {topics:[{topicId,
//       topicName, numPartitions, partitionMetadata:[{partition, racks}]}]}
//   5 ConsumerGroupMemberMetadataKey {groupId, memberId} Value {instanceId, rackId,
//       clientId, clientHost, subscribedTopicNames, subscribedTopicRegex,
//       rebalanceTimeoutMs, serverAssignor[, classicMemberMetadata (tag 0)]}
//   6 ConsumerGroupTargetAssignmentMetadataKey {groupId} Value {assignmentEpoch}
//   7 ConsumerGroupTargetAssignmentMemberKey {groupId, memberId}
//       Value {topicPartitions:[{topicId, partitions}]}
//   8 ConsumerGroupCurrentMemberAssignmentKey {groupId, memberId}
//       Value {memberEpoch, previousMemberEpoch, state, assignedPartitions,
//       partitionsPendingRevocation}
//
// Keys are never flexible (int16 string lengths); values exist at version 0
// only, flexible: compact lengths and a tagged-field section per struct. A
// tagged field shows only when it differs from its default, as in Kafka's
// converters; unknown tags are skipped.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>

#include "common/status.h"
#include "tools/dump_message_reader.h"

namespace daruma::tools {

inline bool IsConsumerGroupRecordType(int16_t type) {
  return type >= 3 && type <= 8;
}

// The key's fields, after its int16 type.
Result<nlohmann::ordered_json> ReadConsumerGroupKey(MessageReader& r, int16_t type);

// The value message's name ("ConsumerGroupMetadataValue", ...), for errors.
const char* ConsumerGroupValueName(int16_t type);

// The value's fields, after its int16 version (0); `r` reads flexibly.
Result<nlohmann::ordered_json> ReadConsumerGroupValue(MessageReader& r, int16_t type);

}  // namespace daruma::tools
