// RequestMetrics: per-API request counts and latency histograms, plus the
// network counters of the Kafka listener (connections, rejected frames).
//
// Latency is measured from the moment a whole request frame has been read to
// the moment the handler responds (or decides not to, acks=0): Kafka's
// RequestMetrics TotalTimeMs minus the send time. The histogram buckets are
// fixed (kLatencyBucketsSeconds, upper bounds, plus +Inf); quantiles are
// estimated from them by linear interpolation inside the bucket, as
// Prometheus' histogram_quantile() does.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace daruma::broker {

inline constexpr std::array<double, 16> kLatencyBucketsSeconds = {
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025,
    0.05,   0.1,     0.25,   0.5,   1.0,    2.5,   5.0,  10.0};

struct ApiLatencyStats {
  int64_t count = 0;
  double sum_seconds = 0;
  // buckets[i]: requests with latency <= kLatencyBucketsSeconds[i] and above
  // the previous bound (NOT cumulative); the last entry is the +Inf bucket.
  std::array<int64_t, kLatencyBucketsSeconds.size() + 1> buckets{};
};

// Estimated q-quantile (0 < q < 1) in seconds; 0 when count == 0. A quantile in
// the +Inf bucket is reported as the largest finite bound.
double EstimateQuantile(const ApiLatencyStats& stats, double q);

// Kafka's name of an API key ("Produce", "Fetch", ...), "Unknown" otherwise:
// the protocol's ApiKeyName, a search of constant tables, so fatal_signals.cc
// may call it in a signal handler.
std::string_view ApiKeyName(int16_t api_key);

// Every api key without a Kafka name is counted under this one key: the key
// comes off the wire, and a series per odd key would let any client create
// 65,536 series (and print several `api="Unknown"` ones, which the text
// format forbids).
inline constexpr int16_t kUnknownApiBucket = -1;
// The `api` label: ApiKeyName, or "unknown" for kUnknownApiBucket.
std::string_view ApiMetricLabel(int16_t api_key);

class RequestMetrics {
 public:
  // Unknown keys (ApiKeyName == "Unknown") are recorded as kUnknownApiBucket.
  void Record(int16_t api_key, double latency_seconds);
  std::map<int16_t, ApiLatencyStats> Snapshot() const;

 private:
  mutable std::mutex mu_;
  std::map<int16_t, ApiLatencyStats> by_api_;
};

// Counters of the Kafka listener.
struct NetworkCounters {
  std::atomic<int64_t> connections_accepted{0};
  std::atomic<int64_t> connections_active{0};
  std::atomic<int64_t> frames_too_large{0};   // size > socket.request.max.bytes
  std::atomic<int64_t> frames_negative{0};    // size < 0
  std::atomic<int64_t> frames_truncated{0};   // peer closed inside a frame
  std::atomic<int64_t> closed_by_handler{0};  // unknown API / bad header
  std::atomic<int64_t> closed_idle{0};        // connections.max.idle.ms passed
  // A response could not be written (EPIPE, ECONNRESET, a file that shrank
  // under sendfile): that connection was closed.
  std::atomic<int64_t> write_errors{0};
  // The peer closed or reset while one of its requests was in flight (its
  // parked fetch, if any, was completed at once).
  std::atomic<int64_t> peer_gone_in_flight{0};
  // accept(2) failed (EMFILE, ENFILE, ENOBUFS...): the listener paused briefly.
  std::atomic<int64_t> accept_errors{0};
  // Gauges of request memory (connection.h): bytes of the buffers of frames
  // being read or handled; the declared sizes reserved against
  // queued.max.request.bytes; connections muted waiting for that pool.
  std::atomic<int64_t> request_memory_bytes{0};
  std::atomic<int64_t> request_queued_bytes{0};
  std::atomic<int64_t> connections_muted{0};
};

}  // namespace daruma::broker
