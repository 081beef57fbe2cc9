#include "broker/metrics.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <map>
#include <tuple>
#include <vector>

#include "broker/health.h"

namespace daruma::broker {
namespace {

constexpr BrokerState kAllStates[] = {BrokerState::kRecovering, BrokerState::kServing,
                                      BrokerState::kStopping};
constexpr double kQuantiles[] = {0.5, 0.99, 0.999};

void Family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  out += fmt::format("# HELP daruma_{} {}\n# TYPE daruma_{} {}\n", name, help, name, type);
}

// Prometheus floats: integers print without a fraction, +Inf spelled so.
std::string Number(double v) {
  return fmt::format("{}", v);
}

void RenderState(const MetricsSources& s, std::string& out) {
  Family(out, "broker_state", "gauge", "1 for the broker's current state");
  for (BrokerState st : kAllStates) {
    out += fmt::format("daruma_broker_state{{state=\"{}\"}} {}\n", BrokerStateName(st),
                       st == s.state ? 1 : 0);
  }
}

struct PartitionRow {
  std::string labels;
  int64_t start, end, hw, size, segments;
};

void RenderPartitions(const MetricsSources& s, std::string& out) {
  if (s.log_manager == nullptr || !s.logs_readable) return;
  std::vector<PartitionRow> rows;
  for (const Log* log : s.log_manager->AllLogs()) {
    const TopicPartition& tp = log->topic_partition();
    rows.push_back(
        {fmt::format("topic=\"{}\",partition=\"{}\"", EscapeLabelValue(tp.topic), tp.partition),
         log->log_start_offset(), log->log_end_offset(), log->high_watermark(),
         log->size_in_bytes(), int64_t(log->num_segments())});
  }
  std::sort(rows.begin(), rows.end(),
            [](const PartitionRow& a, const PartitionRow& b) { return a.labels < b.labels; });
  struct Gauge {
    std::string_view name, help;
    int64_t PartitionRow::*field;
  };
  const Gauge gauges[] = {
      {"log_start_offset", "Kafka LogStartOffset of the partition", &PartitionRow::start},
      {"log_end_offset", "Kafka LogEndOffset of the partition", &PartitionRow::end},
      {"log_high_watermark", "Kafka HighWatermark of the partition", &PartitionRow::hw},
      {"log_size_bytes", "Kafka Size: bytes in all segments of the partition", &PartitionRow::size},
      {"log_segments", "Kafka NumLogSegments of the partition", &PartitionRow::segments},
  };
  for (const Gauge& g : gauges) {
    Family(out, g.name, "gauge", g.help);
    for (const PartitionRow& r : rows) {
      out += fmt::format("daruma_{}{{{}}} {}\n", g.name, r.labels, r.*g.field);
    }
  }
}

void RenderRequests(const MetricsSources& s, std::string& out) {
  if (s.requests == nullptr) return;
  const std::map<int16_t, ApiLatencyStats> stats = s.requests->Snapshot();
  Family(out, "requests_total", "counter", "Kafka requests handled, by API");
  for (const auto& [key, st] : stats) {
    out += fmt::format("daruma_requests_total{{api=\"{}\"}} {}\n", ApiMetricLabel(key), st.count);
  }
  Family(out, "request_latency_seconds", "histogram",
         "Time from a whole request read to its response, by API");
  for (const auto& [key, st] : stats) {
    const std::string_view api = ApiMetricLabel(key);
    int64_t cumulative = 0;
    for (size_t i = 0; i < st.buckets.size(); ++i) {
      cumulative += st.buckets[i];
      const std::string le =
          i < kLatencyBucketsSeconds.size() ? Number(kLatencyBucketsSeconds[i]) : "+Inf";
      out += fmt::format("daruma_request_latency_seconds_bucket{{api=\"{}\",le=\"{}\"}} {}\n", api,
                         le, cumulative);
    }
    out += fmt::format("daruma_request_latency_seconds_sum{{api=\"{}\"}} {}\n", api,
                       Number(st.sum_seconds));
    out += fmt::format("daruma_request_latency_seconds_count{{api=\"{}\"}} {}\n", api, st.count);
  }
  Family(out, "request_latency_quantile_seconds", "gauge",
         "Request latency quantiles estimated from the histogram, by API");
  for (const auto& [key, st] : stats) {
    for (double q : kQuantiles) {
      out +=
          fmt::format("daruma_request_latency_quantile_seconds{{api=\"{}\",quantile=\"{}\"}} {}\n",
                      ApiMetricLabel(key), Number(q), Number(EstimateQuantile(st, q)));
    }
  }
}

void RenderRecovery(const MetricsSources& s, std::string& out) {
  if (s.log_manager == nullptr) return;
  const std::vector<RecoveryGauges> gauges = s.log_manager->RecoveryGaugesSnapshot();
  Family(out, "recovery_remaining_logs", "gauge", "KIP-831 remainingLogsToRecover, by log dir");
  for (const RecoveryGauges& g : gauges) {
    out += fmt::format("daruma_recovery_remaining_logs{{dir=\"{}\"}} {}\n", EscapeLabelValue(g.dir),
                       g.remaining_logs);
  }
  Family(out, "recovery_remaining_segments", "gauge",
         "KIP-831 remainingSegmentsToRecover, by log dir and recovery thread");
  for (const RecoveryGauges& g : gauges) {
    for (size_t t = 0; t < g.remaining_segments.size(); ++t) {
      out += fmt::format("daruma_recovery_remaining_segments{{dir=\"{}\",thread=\"{}\"}} {}\n",
                         EscapeLabelValue(g.dir), t, g.remaining_segments[t]);
    }
  }
  // Kafka's OfflineLogDirectoryCount and LogDirectoryOffline{logDirectory}.
  const std::vector<LogDirHealth> dirs = LogDirsHealth(*s.log_manager);
  Family(out, "offline_log_dirs", "gauge", "Log dirs taken offline by an I/O error");
  out += fmt::format(
      "daruma_offline_log_dirs {}\n",
      std::count_if(dirs.begin(), dirs.end(), [](const LogDirHealth& d) { return !d.error.ok(); }));
  Family(out, "log_dir_offline", "gauge", "1 when the log dir is offline, by log dir");
  for (const LogDirHealth& d : dirs) {
    out += fmt::format("daruma_log_dir_offline{{dir=\"{}\"}} {}\n", EscapeLabelValue(d.path),
                       d.error.ok() ? 0 : 1);
  }
  const ProgressSnapshot p = s.log_manager->Progress();
  const std::pair<std::string_view, int64_t> progress[] = {
      {"recovery_scanned_bytes", p.scanned_bytes},
      {"recovery_bytes_to_scan", p.total_bytes},
      {"recovery_logs_total", p.total_logs},
      {"recovery_logs_remaining", p.remaining_logs},
  };
  for (const auto& [name, value] : progress) {
    Family(out, name, "gauge", "Start-up recovery progress");
    out += fmt::format("daruma_{} {}\n", name, value);
  }
}

void RenderNetwork(const MetricsSources& s, std::string& out) {
  if (s.network == nullptr) return;
  const NetworkCounters& n = *s.network;
  Family(out, "connections_active", "gauge", "Open Kafka client connections");
  out += fmt::format("daruma_connections_active {}\n", n.connections_active.load());
  Family(out, "connections_accepted_total", "counter", "Kafka client connections accepted");
  out += fmt::format("daruma_connections_accepted_total {}\n", n.connections_accepted.load());
  Family(out, "connections_closed_idle_total", "counter",
         "Kafka client connections closed after connections.max.idle.ms without a request");
  out += fmt::format("daruma_connections_closed_idle_total {}\n", n.closed_idle.load());
  Family(out, "frames_rejected_total", "counter",
         "Connections closed because of a request frame, by reason");
  const std::pair<std::string_view, int64_t> reasons[] = {
      {"too_large", n.frames_too_large.load()},
      {"negative_size", n.frames_negative.load()},
      {"truncated", n.frames_truncated.load()},
      {"handler_close", n.closed_by_handler.load()},
  };
  for (const auto& [reason, value] : reasons) {
    out += fmt::format("daruma_frames_rejected_total{{reason=\"{}\"}} {}\n", reason, value);
  }
  const std::tuple<std::string_view, std::string_view, int64_t> memory[] = {
      {"request_memory_bytes", "Bytes of buffers held by request frames being read or handled",
       n.request_memory_bytes.load()},
      {"request_queued_bytes",
       "Declared bytes of requests being read or handled (bounded by queued.max.request.bytes)",
       n.request_queued_bytes.load()},
      {"connections_muted", "Connections not reading until queued.max.request.bytes frees",
       n.connections_muted.load()},
  };
  for (const auto& [name, help, value] : memory) {
    Family(out, name, "gauge", help);
    out += fmt::format("daruma_{} {}\n", name, value);
  }
  Family(out, "requests_parked", "gauge", "Requests parked in the purgatory (long-poll fetches)");
  out += fmt::format("daruma_requests_parked {}\n", s.parked_requests);
  Family(out, "delayed_operations", "gauge",
         "Delayed operations waiting for their condition or deadline, by kind");
  for (const DelayedOperationGauge& g : s.delayed_operations) {
    out += fmt::format("daruma_delayed_operations{{kind=\"{}\"}} {}\n",
                       DelayedOperationKindName(g.kind), g.waiting);
  }
  Family(out, "delayed_operations_expired_total", "counter",
         "Delayed operations forced by their deadline, by kind");
  for (const DelayedOperationGauge& g : s.delayed_operations) {
    out += fmt::format("daruma_delayed_operations_expired_total{{kind=\"{}\"}} {}\n",
                       DelayedOperationKindName(g.kind), g.expired);
  }
  const std::tuple<std::string_view, std::string_view, int64_t> errors[] = {
      {"connection_write_errors_total",
       "Connections closed because a response could not be written (EPIPE, ECONNRESET)",
       n.write_errors.load()},
      {"connection_peer_gone_in_flight_total",
       "Clients that closed or reset while a request of theirs was in flight",
       n.peer_gone_in_flight.load()},
      {"accept_errors_total", "accept(2) failures on the Kafka listener (EMFILE, ENFILE, ...)",
       n.accept_errors.load()},
  };
  for (const auto& [name, help, value] : errors) {
    Family(out, name, "counter", help);
    out += fmt::format("daruma_{} {}\n", name, value);
  }
}

void RenderScrub(const MetricsSources& s, std::string& out) {
  if (s.scrub == nullptr) return;
  const ScrubStatus& sc = *s.scrub;
  auto seconds = [](int64_t ms) { return ms < 0 ? std::string("-1") : Number(double(ms) / 1000); };
  const std::tuple<std::string_view, std::string_view, std::string_view, std::string> rows[] = {
      {"scrub_enabled", "gauge", "1 when the background scrub of old segments runs",
       sc.enabled ? "1" : "0"},
      {"scrub_bytes_total", "counter", "Bytes of old segments the scrub read",
       std::to_string(sc.bytes_scrubbed_total)},
      {"scrub_segments_total", "counter", "Segments the scrub verified to their end",
       std::to_string(sc.segments_scrubbed_total)},
      {"scrub_passes_total", "counter", "Full scrub passes completed",
       std::to_string(sc.passes_completed)},
      {"scrub_damaged_ranges", "gauge", "Damaged ranges recorded now (not served to fetches)",
       std::to_string(sc.findings.size())},
      {"scrub_findings_total", "counter", "Damaged ranges the scrub found since the broker started",
       std::to_string(sc.findings_recorded_total)},
      {"scrub_damaged_bytes", "gauge", "Bytes in the damaged ranges recorded now",
       std::to_string(sc.damaged_bytes)},
      {"scrub_pass_bytes", "gauge", "Bytes the current (or last) scrub pass reads",
       std::to_string(sc.pass_bytes_total)},
      {"scrub_pass_bytes_done", "gauge", "Bytes the current (or last) scrub pass has read",
       std::to_string(sc.pass_bytes_done)},
      {"scrub_throttled_seconds_total", "counter",
       "Time the scrub waited for daruma.scrub.bytes.per.second", seconds(sc.throttled_ms_total)},
      {"scrub_last_pass_duration_seconds", "gauge",
       "Duration of the last completed scrub pass (-1: none yet)",
       seconds(sc.last_pass_duration_ms)},
      {"scrub_last_pass_completed_timestamp_seconds", "gauge",
       "When the last scrub pass completed, Unix time (-1: never)",
       seconds(sc.last_pass_completed_ms)},
  };
  for (const auto& [name, type, help, value] : rows) {
    Family(out, name, type, help);
    out += fmt::format("daruma_{} {}\n", name, value);
  }
}

// Prometheus' standard process gauges, read from /proc/self (0 elsewhere).
void RenderProcess(std::string& out) {
  int64_t fds = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/self/fd", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++fds;
  }
  int64_t rss_pages = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    long long size = 0, resident = 0;
    if (std::fscanf(f, "%lld %lld", &size, &resident) == 2) rss_pages = resident;
    std::fclose(f);
  }
  out += "# HELP process_open_fds Open file descriptors of the broker process\n";
  out += "# TYPE process_open_fds gauge\n";
  out += fmt::format("process_open_fds {}\n", fds);
  out += "# HELP process_resident_memory_bytes Resident memory of the broker process\n";
  out += "# TYPE process_resident_memory_bytes gauge\n";
  out += fmt::format("process_resident_memory_bytes {}\n", rss_pages * ::sysconf(_SC_PAGESIZE));
}

}  // namespace

std::string EscapeLabelValue(std::string_view value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string RenderPrometheus(const MetricsSources& sources) {
  std::string out;
  RenderState(sources, out);
  RenderPartitions(sources, out);
  RenderRequests(sources, out);
  RenderRecovery(sources, out);
  RenderNetwork(sources, out);
  RenderScrub(sources, out);
  RenderProcess(out);
  return out;
}

}  // namespace daruma::broker
