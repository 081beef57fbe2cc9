// The configuration `daruma check`, `repair` and `recover` run with: the log
// dirs and the log settings (index.interval.bytes, segment.index.bytes,
// producer.id.expiration.ms, ...) a broker would use, so that a check
// compares with, and a repair rebuilds, what that broker writes.
//
// Sources, later winning: a Kafka server.properties file (--config, read by
// LoadServerConfig exactly as `daruma serve` reads it), each --set key=value,
// then --log-dirs over log.dirs/log.dir. No log dir at all is
// kInvalidArgument (a tool must not guess Kafka's /tmp/kafka-logs), and so is
// a log dir that does not exist or is not a directory: these tools inspect
// and fix existing dirs and never create one (a typo would otherwise be
// "recovered" as a fresh, empty dir).
#pragma once

#include <iosfwd>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "log/log_config.h"
#include "recovery/server_config.h"

namespace daruma::tools {

struct ToolConfig {
  std::vector<std::string> log_dirs;
  LogConfig log;
  ServerConfig server;  // everything else the file and --set said
};

Result<ToolConfig> ResolveToolConfig(const std::vector<std::string>& log_dirs,
                                     const std::string& config_file,
                                     const std::vector<std::string>& overrides);

// kInvalidArgument for the first dir that is missing or not a directory:
// "log dir <d>: no such directory" / "...: not a directory (a file)".
Status CheckLogDirsExist(const std::vector<std::string>& log_dirs);

// `path` without "." / ".." steps and trailing slashes, for comparing log
// dir paths as written ("/data/kafka/" and "/data/kafka" are one dir).
std::string NormalDirPath(const std::string& path);

// "daruma <command>: warning: <w>" on `err` for each configuration warning.
void PrintConfigWarnings(const ServerConfig& config, std::string_view command, std::ostream& err);

}  // namespace daruma::tools
