// Prometheus text exposition (format 0.0.4) of everything `/metrics` shows.
//
// Families (all names prefixed daruma_):
//   broker_state{state}                       1 for the current state, 0 otherwise
//   log_start_offset / log_end_offset / log_high_watermark / log_size_bytes /
//   log_segments{topic,partition}             Kafka's kafka.log:type=Log gauges
//                                             (LogStartOffset, LogEndOffset,
//                                             HighWatermark, Size, NumLogSegments);
//                                             only once recovery has finished
//   requests_total{api}                       counter; api is Kafka's name, or
//                                             "unknown" for every other key
//                                             (one series: request_metrics.h)
//   request_latency_seconds{api}              histogram (_bucket{le}, _sum, _count)
//   request_latency_quantile_seconds{api,quantile}  0.5/0.99/0.999 estimated from
//                                             the histogram
//   offline_log_dirs                          Kafka's OfflineLogDirectoryCount
//   log_dir_offline{dir}                      1 when that log dir is offline
//   recovery_remaining_logs{dir}              KIP-831 remainingLogsToRecover
//   recovery_remaining_segments{dir,thread}   KIP-831 remainingSegmentsToRecover
//   recovery_scanned_bytes / recovery_bytes_to_scan / recovery_logs_total /
//   recovery_logs_remaining                   progress of start-up recovery
//   connections_active, connections_accepted_total,
//   frames_rejected_total{reason}, connection_write_errors_total,
//   connection_peer_gone_in_flight_total, accept_errors_total
//                                             the Kafka listener
//   request_memory_bytes, request_queued_bytes, connections_muted
//                                             request memory (connection.h)
//   requests_parked                          fetches waiting in the purgatory
//   delayed_operations{kind}                 delayed operations waiting now, by
//                                            kind (fetch_partition, group_join,
//                                            group_sync, member_heartbeat,
//                                            pending_member)
//   delayed_operations_expired_total{kind}   counter: those forced by their
//                                            deadline
//   scrub_enabled, scrub_damaged_ranges, scrub_damaged_bytes, scrub_pass_bytes,
//   scrub_pass_bytes_done, scrub_last_pass_duration_seconds,
//   scrub_last_pass_completed_timestamp_seconds   gauges of the background
//                                             scrub (scrubber.h), once serving
//   scrub_bytes_total, scrub_segments_total, scrub_passes_total,
//   scrub_findings_total, scrub_throttled_seconds_total   its counters
//   process_open_fds, process_resident_memory_bytes (no daruma_ prefix:
//                                             Prometheus' standard names)
// Label values are escaped (\\, \", \n) as the format requires.
#pragma once

#include <string>

#include "broker/broker_state.h"
#include "broker/frame_handler.h"
#include "broker/request_metrics.h"
#include "broker/scrubber.h"
#include "recovery/log_manager.h"

namespace daruma::broker {

struct MetricsSources {
  BrokerState state = BrokerState::kRecovering;
  // Null before the manager exists. Its logs are read only when
  // `logs_readable` (recovery finished), because AllLogs() is not stable
  // while Startup loads partitions.
  const LogManager* log_manager = nullptr;
  bool logs_readable = false;
  const RequestMetrics* requests = nullptr;
  const NetworkCounters* network = nullptr;
  int64_t parked_requests = 0;  // FrameHandler::ParkedRequests once serving
  std::vector<DelayedOperationGauge> delayed_operations;  // FrameHandler::DelayedOperations
  const ScrubStatus* scrub = nullptr;                     // once serving
};

std::string RenderPrometheus(const MetricsSources& sources);

// "a\"b" for a"b: a label value escaped for the text format.
std::string EscapeLabelValue(std::string_view value);

}  // namespace daruma::broker
