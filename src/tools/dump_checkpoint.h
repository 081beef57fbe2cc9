// `daruma dump` of the text metadata files kafka-dump-log ignores ("Ignoring
// unknown file"); Daruma prints them so one tool reads a whole log dir:
//
//  * offset checkpoints (`recovery-point-offset-checkpoint`,
//    `log-start-offset-checkpoint`, `replication-offset-checkpoint`,
//    `cleaner-offset-checkpoint`; spec §9.3): "topic: T partition: P
//    offset: O" per entry, sorted by topic and partition (Kafka's file order
//    is hash order and carries no meaning);
//  * `leader-epoch-checkpoint` (§9.5): "epoch: E startOffset: O" per entry,
//    in file order;
//  * `partition.metadata` (§9.6): "version: V topicId: <base64 id>".
//
// The wording mirrors kafka-dump-log's "name: value" style. A file that does
// not parse is printed on stderr (file, line, what was expected), exit 1.
#pragma once

#include <string>

#include "tools/dump_context.h"

namespace daruma::tools {

enum class MetadataFileKind {
  kNone,
  kOffsetCheckpoint,
  kLeaderEpochCheckpoint,
  kPartitionMetadata
};

// The kind of a metadata file by its name (any directory).
MetadataFileKind MetadataFileKindOf(const std::string& file_name);

int DumpMetadataFile(const std::string& path, MetadataFileKind kind, DumpContext& ctx);

}  // namespace daruma::tools
