// `daruma dump --offsets-decoder`: the key and payload text kafka-dump-log's
// OffsetsMessageParser prints for a `__consumer_offsets` record (Kafka 3.x /
// 4.0 trunk as of spec §0; older tools printed "offset_commit::group=..."
// text instead).
//
// Key: int16 record type, then the key struct with that version:
//   type 0, 1  OffsetCommitKey     group STRING, topic STRING, partition INT32
//   type 2     GroupMetadataKey    group STRING
// printed as {"type":"<type>","data":{...}}.
// Value: int16 version, then (flexible from version 4: compact strings,
// arrays and bytes, tagged fields skipped):
//   OffsetCommitValue v0-4: offset INT64, leaderEpoch INT32 (v3+), metadata
//     STRING, commitTimestamp INT64, expireTimestamp INT64 (v1 only)
//   GroupMetadataValue v0-4: protocolType STRING, generation INT32,
//     protocol STRING?, leader STRING?, currentStateTimestamp INT64 (v2+),
//     members [memberId STRING, groupInstanceId STRING? (v3+), clientId
//     STRING, clientHost STRING, rebalanceTimeout INT32 (v1+), sessionTimeout
//     INT32, subscription BYTES, assignment BYTES]
// printed as {"version":"<v>","data":{...}}, fields named and ordered as
// Kafka's generated JSON converters do; BYTES print as Base64. When the
// protocolType is "consumer", each member's subscription and assignment are
// replaced by their decoded ConsumerProtocolSubscription (v0-3) /
// ConsumerProtocolAssignment (v0-3) JSON; undecodable ones keep the Base64.
// A null value prints "<DELETE>". KIP-848's consumer-group records (types
// 3-8) are decoded as tools/consumer_group_records_decoder.h describes. Other
// record types (share groups, 9+) print "Unknown record type <t> at offset
// <o>, skipping.", as Kafka 3.9's tool does; a malformed record prints
// "Error at offset <o>, skipping. <reason>" as the key and no payload.
#pragma once

#include "tools/dump_record_decoder.h"

namespace daruma::tools {

DecodedKeyValue DecodeOffsetsRecord(const Record& record);

}  // namespace daruma::tools
