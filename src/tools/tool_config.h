// The configuration `daruma check` and `daruma repair` run with: the log
// dirs and the log settings (index.interval.bytes, segment.index.bytes,
// producer.id.expiration.ms, ...) a broker would use, so that a check
// compares with, and a repair rebuilds, what that broker writes.
//
// Sources, later winning: a Kafka server.properties file (--config, read by
// LoadServerConfig exactly as `daruma serve` and `daruma recover` read it),
// each --set key=value, then --log-dirs over log.dirs/log.dir. No log dir at
// all is kInvalidArgument (a tool must not guess Kafka's /tmp/kafka-logs).
#pragma once

#include <string>
#include <vector>

#include "common/status.h"
#include "log/log_config.h"

namespace daruma::tools {

struct ToolConfig {
  std::vector<std::string> log_dirs;
  LogConfig log;
};

Result<ToolConfig> ResolveToolConfig(const std::vector<std::string>& log_dirs,
                                     const std::string& config_file,
                                     const std::vector<std::string>& overrides);

}  // namespace daruma::tools
