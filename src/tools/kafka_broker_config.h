// `daruma recover --kafka-config FILE`: recovery of a Kafka broker's own log
// dirs, read from that broker's server.properties (issue 24).
//
// The file is resolved exactly as --config resolves one (tools/tool_config.h:
// log.dirs / log.dir, num.recovery.threads.per.data.dir, the log.index.* and
// log.segment.* settings the rebuilt indexes follow). On top of that:
//  * the KRaft metadata log is never recovered: `metadata.log.dir`, or, when
//    unset, `__cluster_metadata-0` in the first log dir (which LogManager
//    skips; named for a KRaft broker, process.roles set, or when it exists),
//    is named as left untouched;
//  * a dir a running Kafka broker holds is refused before anything changes:
//    every log dir's `.lock` (LogManager's DirLock refuses a record lock, the
//    kind Kafka takes) and the metadata dir's, probed without creating or
//    locking anything there.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "recovery/server_config.h"

namespace daruma::tools {

inline constexpr char kMetadataLogDirKey[] = "metadata.log.dir";
inline constexpr char kProcessRolesKey[] = "process.roles";  // set only in KRaft mode
inline constexpr char kMetadataPartitionDirName[] = "__cluster_metadata-0";

struct KafkaMetadataLog {
  std::string path;  // the metadata partition dir or metadata.log.dir; "" if none
  std::string why;   // for the summary and the report
};

// Where the broker of `config` keeps its KRaft metadata log, given the log
// dirs this run recovers.
KafkaMetadataLog FindMetadataLog(const ServerConfig& config,
                                 const std::vector<std::string>& log_dirs);

// kIoError naming the `.lock` and its holder when a Kafka broker holds any
// of `dirs` (DirLock::CheckNotHeld); changes nothing.
Status CheckNoKafkaBrokerRuns(const std::vector<std::string>& dirs);

// {"file", "metadataLog": {"path", "untouched": true, "why"}} for the report.
nlohmann::json KafkaConfigJson(const std::string& file, const KafkaMetadataLog& metadata);

}  // namespace daruma::tools
