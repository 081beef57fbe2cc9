#include "recovery/recovery_report.h"

#include <nlohmann/json.hpp>

namespace daruma {

nlohmann::json ToJson(const PartitionRecoveryReport& p) {
  nlohmann::json segments = nlohmann::json::array();
  for (const auto& s : p.segments)
    segments.push_back({{"baseOffset", s.base_offset}, {"sizeBytes", s.size_bytes}});
  auto ranges = [](const std::vector<QuarantinedRange>& in) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& q : in) {
      nlohmann::json j = {{"file", q.file},     {"fromPosition", q.from_position},
                          {"bytes", q.bytes},   {"kind", DamageKindName(q.kind)},
                          {"reason", q.reason}, {"quarantinePath", q.quarantine_path}};
      if (q.first_offset) j["firstOffset"] = *q.first_offset;
      if (q.last_offset) j["lastOffset"] = *q.last_offset;
      out.push_back(j);
    }
    return out;
  };
  nlohmann::json damage = nlohmann::json::array();
  for (const auto& d : p.damage)
    damage.push_back({{"kind", DamageKindName(d.kind)}, {"text", d.text}});
  return {{"topic", p.topic},
          {"partition", p.partition},
          {"dir", p.dir},
          {"logStartOffset", p.log_start_offset},
          {"logEndOffset", p.log_end_offset},
          {"highWatermark", p.high_watermark},
          {"recoveryPoint", p.recovery_point},
          {"loadedRecoveryPoint", p.loaded_recovery_point},
          {"lastStableOffset", p.last_stable_offset},
          {"segments", segments},
          {"scannedBytes", p.scanned_bytes},
          {"truncatedBytes", p.truncated_bytes},
          {"quarantined", ranges(p.quarantined)},
          {"notKept", ranges(p.not_kept)},
          {"rebuiltIndexes", p.rebuilt_indexes},
          {"deletedFiles", p.deleted_files},
          {"strayFiles", p.stray_files},
          {"leaderEpochs", p.leader_epochs},
          {"abortedTransactions", p.aborted_transactions},
          {"activeProducers", p.active_producers},
          {"recoveredSegments", p.recovered_segments},
          {"errors", p.errors},
          {"warnings", p.warnings},
          {"damage", damage},
          {"leftUnchanged", p.left_unchanged},
          {"durationMs", p.duration_ms}};
}

nlohmann::json RecoveryReport::ToJson() const {
  nlohmann::json dirs = nlohmann::json::array();
  for (const auto& d : log_dirs) {
    nlohmann::json j = {{"path", d.path},
                        {"cleanShutdown", d.clean_shutdown},
                        {"offline", d.offline},
                        {"error", d.offline ? nlohmann::json(d.error) : nlohmann::json()}};
    if (d.broker_epoch) j["brokerEpoch"] = *d.broker_epoch;
    if (!d.marker_why.empty()) {
      nlohmann::json marker = {
          {"out", d.marker_out ? nlohmann::json(*d.marker_out) : nlohmann::json()},
          {"why", d.marker_why}};
      if (d.clean_shutdown) {
        marker["in"] = d.broker_epoch ? nlohmann::json(*d.broker_epoch) : nlohmann::json();
      }
      j["marker"] = marker;
    }
    dirs.push_back(j);
  }
  nlohmann::json parts = nlohmann::json::array();
  int64_t segments = 0, scanned = 0, truncated = 0, quarantined = 0;
  for (const auto& p : partitions) {
    parts.push_back(daruma::ToJson(p));
    segments += int64_t(p.segments.size());
    scanned += p.scanned_bytes;
    truncated += p.truncated_bytes;
    for (const auto& q : p.quarantined) quarantined += q.bytes;
  }
  return {{"logDirs", dirs},
          {"partitions", parts},
          {"totals",
           {{"partitions", partitions.size()},
            {"segments", segments},
            {"scannedBytes", scanned},
            {"truncatedBytes", truncated},
            {"quarantinedBytes", quarantined},
            {"durationMs", duration_ms}}}};
}

}  // namespace daruma
