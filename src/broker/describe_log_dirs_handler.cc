// DescribeLogDirs (Kafka's ReplicaManager.describeLogDirs): every configured
// log dir, by absolute path, with the requested partitions it holds (null
// topics = all): size in bytes, offset lag 0 (the log end is the high
// watermark on one node once a produce is answered; Kafka reports
// max(0, HW - LEO)), never a future log (no AlterReplicaLogDirs). An offline
// dir is KAFKA_STORAGE_ERROR with no topics. v4 adds the volume's total and
// usable bytes (statvfs: f_blocks and f_bavail, as Java's FileStore).
#include <sys/statvfs.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {
namespace {

using DirResult = DescribeLogDirsResponse::Result;

std::string AbsolutePath(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path abs = std::filesystem::absolute(dir, ec);
  return ec ? dir : abs.lexically_normal().string();
}

// Strips a trailing '/' so "data/" and "data" name one dir.
std::string Normal(const std::string& dir) {
  return std::filesystem::path(dir).lexically_normal().string();
}

std::string ParentDir(const std::string& partition_dir) {
  return Normal(std::filesystem::path(partition_dir).parent_path().string());
}

}  // namespace

void HandleDescribeLogDirs(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                           const Respond& respond) {
  Result<DescribeLogDirsRequest> request = DecodeDescribeLogDirsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  std::optional<std::set<TopicPartition>> wanted;
  if (request->topics) {
    wanted.emplace();
    for (const auto& t : *request->topics) {
      for (int32_t p : t.partitions) wanted->insert({t.topic, p});
    }
  }
  LogManager* manager = env.ctx.log_manager;
  // Partitions by log dir, then topic.
  std::map<std::string, std::map<std::string, std::vector<Log*>>> by_dir;
  for (Log* log : manager->AllLogs()) {
    const TopicPartition& tp = log->topic_partition();
    if (wanted && wanted->count(tp) == 0) continue;
    by_dir[ParentDir(log->dir())][tp.topic].push_back(log);
  }
  DescribeLogDirsResponse response;
  std::set<std::string> seen;
  for (const std::string& configured : env.ctx.config.log_dirs) {
    const std::string dir = Normal(configured);
    if (!seen.insert(dir).second) continue;
    DirResult out;
    out.log_dir = AbsolutePath(dir);
    if (manager->failure_channel().IsOffline(configured) ||
        manager->failure_channel().IsOffline(dir)) {
      out.error_code = ErrorCode::kKafkaStorageError;
      response.results.push_back(std::move(out));
      continue;
    }
    struct statvfs vfs {};
    if (statvfs(dir.c_str(), &vfs) == 0) {
      out.total_bytes = int64_t(vfs.f_blocks) * int64_t(vfs.f_frsize);
      out.usable_bytes = int64_t(vfs.f_bavail) * int64_t(vfs.f_frsize);
    }
    for (auto& [topic, logs] : by_dir[dir]) {
      DescribeLogDirsResponse::Topic t;
      t.name = topic;
      for (Log* log : logs) {
        const int64_t lag = std::max<int64_t>(0, log->high_watermark() - log->log_end_offset());
        t.partitions.push_back({.partition_index = log->topic_partition().partition,
                                .partition_size = log->size_in_bytes(),
                                .offset_lag = lag,
                                .is_future_key = false});
      }
      out.topics.push_back(std::move(t));
    }
    response.results.push_back(std::move(out));
  }
  respond(EncodeResponseFrame(env, header, response, EncodeDescribeLogDirsResponse), false);
}

}  // namespace daruma::broker
