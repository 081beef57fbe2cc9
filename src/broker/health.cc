#include "broker/health.h"

#include <fmt/format.h>

#include <map>
#include <nlohmann/json.hpp>

namespace daruma::broker {

namespace {

// Partitions of online dirs that are not served whole: those start-up
// could not load (left as found), and those whose writes stopped on an
// error that was not the disk's (Log::FailWrites; reads still work). An
// offline dir's are in logDirs instead.
nlohmann::json FailedPartitionsJson(const LogManager& log_manager) {
  const std::map<std::string, Status> offline = log_manager.failure_channel().OfflineDirs();
  nlohmann::json out = nlohmann::json::array();
  for (const PartitionRecoveryReport& p : log_manager.report().partitions) {
    if (p.errors.empty() || offline.count(ParentDir(p.dir)) > 0) continue;
    out.push_back({{"partition", fmt::format("{}-{}", p.topic, p.partition)},
                   {"dir", p.dir},
                   {"state", "not loaded"},
                   {"error", p.errors.front()}});
  }
  for (Log* log : log_manager.AllLogs()) {
    Status failure = log->write_failure();
    if (failure.ok() || offline.count(ParentDir(log->dir())) > 0) continue;
    out.push_back({{"partition", log->topic_partition().ToString()},
                   {"dir", log->dir()},
                   {"state", "writes stopped"},
                   {"error", failure.ToString()}});
  }
  return out;
}

}  // namespace

nlohmann::json HealthJson(BrokerState state, const LogManager* log_manager,
                          const std::string& kafka_listener,
                          const std::optional<CoordinatorStatus>& groups,
                          const std::optional<TxnCoordinatorStatus>& txns,
                          const std::optional<ScrubStatus>& scrub,
                          std::optional<int> unclean_starts_before) {
  nlohmann::json logs = nlohmann::json::object();
  nlohmann::json segments = nlohmann::json::object();
  nlohmann::json dirs = nlohmann::json::array();
  int64_t offline_dirs = 0;
  nlohmann::json failed = nlohmann::json::array();
  ProgressSnapshot progress;
  if (log_manager != nullptr) {
    for (const RecoveryGauges& g : log_manager->RecoveryGaugesSnapshot()) {
      logs[g.dir] = g.remaining_logs;
      segments[g.dir] = g.remaining_segments;
    }
    for (const LogDirHealth& d : LogDirsHealth(*log_manager)) {
      if (d.error.ok()) {
        dirs.push_back({{"path", d.path}, {"online", true}});
      } else {
        dirs.push_back({{"path", d.path}, {"online", false}, {"error", d.error.ToString()}});
        ++offline_dirs;
      }
    }
    progress = log_manager->Progress();
    // The start-up report is whole (and no longer written) once serving.
    if (state == BrokerState::kServing) failed = FailedPartitionsJson(*log_manager);
  }
  nlohmann::json j;
  j["state"] = std::string(BrokerStateName(state));
  j["kafkaListener"] = kafka_listener.empty() ? nlohmann::json() : nlohmann::json(kafka_listener);
  j["recovery"] = {
      {"remainingLogsToRecover", logs},         {"remainingSegmentsToRecover", segments},
      {"scannedBytes", progress.scanned_bytes}, {"bytesToScan", progress.total_bytes},
      {"totalLogs", progress.total_logs},       {"remainingLogs", progress.remaining_logs}};
  j["logDirs"] = std::move(dirs);
  j["offlineLogDirs"] = offline_dirs;
  j["failedPartitions"] = std::move(failed);
  if (groups) {
    j["groupCoordinator"] = {{"state", groups->loaded ? "loaded" : "loading"},
                             {"groups", groups->groups}};
  }
  if (txns) {
    j["transactionCoordinator"] = {{"state", txns->loaded ? "loaded" : "loading"},
                                   {"transactionalIds", txns->transactional_ids},
                                   {"pendingMarkers", txns->pending_markers}};
  }
  if (scrub) j["scrub"] = ToJson(*scrub);
  if (unclean_starts_before) {
    j["lastShutdown"] = {{"clean", *unclean_starts_before == 0},
                         {"uncleanStartsInARow", *unclean_starts_before}};
  }
  return j;
}

std::vector<LogDirHealth> LogDirsHealth(const LogManager& log_manager) {
  std::map<std::string, Status> offline = log_manager.failure_channel().OfflineDirs();
  std::vector<LogDirHealth> out;
  for (const RecoveryGauges& g : log_manager.RecoveryGaugesSnapshot()) {
    auto it = offline.find(g.dir);
    if (it == offline.end()) {
      out.push_back({g.dir, Status::Ok()});
    } else {
      out.push_back({g.dir, it->second});
      offline.erase(it);
    }
  }
  for (auto& [dir, error] : offline) out.push_back({dir, error});
  return out;
}

int HealthHttpStatus(BrokerState state) {
  return state == BrokerState::kServing ? 200 : 503;
}

}  // namespace daruma::broker
