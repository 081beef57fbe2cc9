#include "tools/kafka_broker_config.h"

#include <filesystem>
#include <nlohmann/json.hpp>
#include <system_error>

#include "common/file_system.h"
#include "recovery/dir_lock.h"
#include "tools/tool_config.h"

namespace daruma::tools {

KafkaMetadataLog FindMetadataLog(const ServerConfig& config,
                                 const std::vector<std::string>& log_dirs) {
  auto it = config.other.find(kMetadataLogDirKey);
  if (it == config.other.end() || it->second.empty()) {
    // Kafka's default: a KRaft broker keeps the metadata log in its first log
    // dir. A ZooKeeper-mode broker (no process.roles) has none, unless one is
    // there anyway.
    const std::vector<std::string>& dirs = config.log_dirs.empty() ? log_dirs : config.log_dirs;
    if (dirs.empty()) return {};
    const std::string path = JoinPath(dirs.front(), kMetadataPartitionDirName);
    std::error_code ec;
    if (config.other.count(kProcessRolesKey) == 0 && !std::filesystem::exists(path, ec)) return {};
    return {path,
            "KRaft metadata log (metadata.log.dir unset, so in the first log dir): skipped, left "
            "untouched"};
  }
  const std::string dir = it->second;
  for (const std::string& d : log_dirs) {
    if (NormalDirPath(d) == NormalDirPath(dir)) {
      return {JoinPath(dir, kMetadataPartitionDirName),
              "KRaft metadata log (metadata.log.dir is a log dir too): skipped, left untouched"};
    }
  }
  return {dir, "KRaft metadata.log.dir: not recovered, left untouched"};
}

Status CheckNoKafkaBrokerRuns(const std::vector<std::string>& dirs) {
  for (const std::string& dir : dirs) DARUMA_RETURN_IF_ERROR(DirLock::CheckNotHeld(dir));
  return Status::Ok();
}

nlohmann::json KafkaConfigJson(const std::string& file, const KafkaMetadataLog& metadata) {
  nlohmann::json j = {{"file", file}};
  if (!metadata.path.empty()) {
    j["metadataLog"] = {{"path", metadata.path}, {"untouched", true}, {"why", metadata.why}};
  }
  return j;
}

}  // namespace daruma::tools
