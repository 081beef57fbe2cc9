// KRaft's control records as kafka-dump-log prints them (DumpLogSegments, Kafka
// 3.9): the value of a SNAPSHOT_HEADER(3), SNAPSHOT_FOOTER(4), KRAFT_VERSION(5)
// or KRAFT_VOTERS(6) record decoded at version 0 (ControlRecordUtils), shown
// as its message name and the generated JSON converter's compact JSON, e.g.
//
//   SnapshotHeader {"version":0,"lastContainedLogTimestamp":1728565330138}
//   KRaftVoters {"version":0,"voters":[{"voterId":1,"voterDirectoryId":"...",
//     "endpoints":[{"name":"CONTROLLER","host":"h","port":9093}],
//     "kRaftVersionFeature":{"minSupportedVersion":0,"maxSupportedVersion":1}}]}
//
// All four messages are flexible from version 0: compact arrays and strings,
// and a tagged-field section closing each struct, whose fields the JSON does
// not show.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "record/control_record.h"

namespace daruma::tools {

// "<Name> <json>", or nullopt when `type` is none of the four or `value`
// does not decode (Kafka's tool throws there; the caller prints the type).
std::optional<std::string> DescribeKraftControlRecord(ControlRecordType type,
                                                      std::string_view value);

}  // namespace daruma::tools
