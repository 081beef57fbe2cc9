// The `/health` JSON document:
//   {"state": "recovering" | "serving" | "stopping",
//    "kafkaListener": "127.0.0.1:9092" | null,         // null until bound
//    "recovery": {
//      "remainingLogsToRecover": {"<dir>": n, ...},       // KIP-831
//      "remainingSegmentsToRecover": {"<dir>": [n per recovery thread], ...},
//      "scannedBytes": n, "bytesToScan": n, "totalLogs": n, "remainingLogs": n},
//    "logDirs": [{"path": "<dir>", "online": true|false,
//                 "error": "<the I/O error that took it offline>"}, ...],
//    "offlineLogDirs": n,   // Kafka's OfflineLogDirectoryCount
//    "failedPartitions": [{"partition": "<topic>-<n>", "dir": "<partition dir>",
//                          "state": "not loaded" | "writes stopped",
//                          "error": "..."}, ...],  // in online dirs, once serving
//    "groupCoordinator": {"state": "loading" | "loaded", "groups": n},  // once serving
//    "transactionCoordinator": {"state": "loading" | "loaded",          // once serving
//                               "transactionalIds": n, "pendingMarkers": n},
//    "scrub": {...}}   // once serving: the background scrub (scrubber.h ToJson):
//                      // state, pass progress, totals, findings (partition,
//                      // segment, byte range, offset range, kind)
// The HTTP status is 200 while serving and 503 otherwise, so a load balancer
// or a readiness probe can use the status alone; a broker serving with an
// offline log dir still answers 200 (its other dirs serve), and a monitor
// alerts on offlineLogDirs.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "broker/broker_state.h"
#include "broker/frame_handler.h"
#include "broker/scrubber.h"
#include "recovery/log_manager.h"

namespace daruma::broker {

// `log_manager` may be null (before it exists): the recovery object is then
// all zeros. `kafka_listener` is empty until the Kafka port is bound.
// `groups` and `txns` are the coordinators' status, absent before the
// handler exists. `unclean_starts_before`: the crash-loop guard's count of
// starts in a row before this one that did not end in a clean shutdown,
// shown as "lastShutdown" (0: it was clean) so that a monitor sees an
// unclean start without reading the log.
nlohmann::json HealthJson(BrokerState state, const LogManager* log_manager,
                          const std::string& kafka_listener,
                          const std::optional<CoordinatorStatus>& groups = std::nullopt,
                          const std::optional<TxnCoordinatorStatus>& txns = std::nullopt,
                          const std::optional<ScrubStatus>& scrub = std::nullopt,
                          std::optional<int> unclean_starts_before = std::nullopt);

int HealthHttpStatus(BrokerState state);

// Every log dir with its state, for /health and /metrics: the dirs start-up
// knows (in log.dirs order), then any other dir the failure channel holds.
// `error` is OK for an online dir, else the first error that took it offline.
struct LogDirHealth {
  std::string path;
  Status error;
};
std::vector<LogDirHealth> LogDirsHealth(const LogManager& log_manager);

}  // namespace daruma::broker
