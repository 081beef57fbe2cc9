// KRaft's metadata log (`__cluster_metadata-0`, kMetadataLogDirName) in a log dir: Daruma never
// loads or changes it (it is the controller quorum's, not a partition a
// broker serves), but `check` says it is there and verifies it read-only:
// every `.log` segment is scanned as recovery would scan it (sizes, CRCs, the
// header fields the CRC does not cover), and a segment that does not end
// where its last valid batch ends is an operator-only problem. So are what
// a Kafka broker would stop at when it starts: a damaged newest snapshot
// (`<end offset>-<epoch>.checkpoint`), metadata that cannot be replayed
// whole (kraft_topic_configs.h), and a `quorum-state` Kafka cannot read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "recovery/log_checker.h"
#include "recovery/log_dirs.h"

namespace daruma {

struct MetadataLogCheck {
  int64_t segments = 0;
  int64_t bytes = 0;
  std::string snapshot;  // the newest whole snapshot; "" for none
  std::vector<CheckProblem> problems;
};

// `dir` is the `__cluster_metadata-0` directory. Never writes; an unreadable
// file is a problem naming it.
MetadataLogCheck CheckMetadataLog(FileSystem* fs, const std::string& dir,
                                  int32_t index_interval_bytes);

}  // namespace daruma
