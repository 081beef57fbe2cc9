#include "broker/health.h"

#include <map>
#include <nlohmann/json.hpp>

namespace daruma::broker {

nlohmann::json HealthJson(BrokerState state, const LogManager* log_manager,
                          const std::string& kafka_listener,
                          const std::optional<CoordinatorStatus>& groups,
                          const std::optional<TxnCoordinatorStatus>& txns,
                          const std::optional<ScrubStatus>& scrub,
                          std::optional<int> unclean_starts_before) {
  nlohmann::json logs = nlohmann::json::object();
  nlohmann::json segments = nlohmann::json::object();
  // Every log dir, online or not: a dir that failed keeps its first error.
  nlohmann::json dirs = nlohmann::json::array();
  int64_t offline_dirs = 0;
  ProgressSnapshot progress;
  if (log_manager != nullptr) {
    std::map<std::string, Status> offline = log_manager->failure_channel().OfflineDirs();
    offline_dirs = int64_t(offline.size());
    for (const RecoveryGauges& g : log_manager->RecoveryGaugesSnapshot()) {
      logs[g.dir] = g.remaining_logs;
      segments[g.dir] = g.remaining_segments;
      auto it = offline.find(g.dir);
      if (it == offline.end()) {
        dirs.push_back({{"path", g.dir}, {"online", true}});
      } else {
        dirs.push_back({{"path", g.dir}, {"online", false}, {"error", it->second.ToString()}});
        offline.erase(it);
      }
    }
    for (const auto& [dir, error] : offline) {
      dirs.push_back({{"path", dir}, {"online", false}, {"error", error.ToString()}});
    }
    progress = log_manager->Progress();
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

int HealthHttpStatus(BrokerState state) {
  return state == BrokerState::kServing ? 200 : 503;
}

}  // namespace daruma::broker
