#include "broker/request_metrics.h"

#include <algorithm>

#include "protocol/api_keys.h"

namespace daruma::broker {

double EstimateQuantile(const ApiLatencyStats& stats, double q) {
  if (stats.count == 0) return 0;
  const double rank = q * double(stats.count);
  int64_t below = 0;
  for (size_t i = 0; i < stats.buckets.size(); ++i) {
    const int64_t in_bucket = stats.buckets[i];
    if (in_bucket > 0 && double(below + in_bucket) >= rank) {
      if (i == kLatencyBucketsSeconds.size()) return kLatencyBucketsSeconds.back();
      const double lower = i == 0 ? 0.0 : kLatencyBucketsSeconds[i - 1];
      const double upper = kLatencyBucketsSeconds[i];
      const double fraction = std::clamp((rank - double(below)) / double(in_bucket), 0.0, 1.0);
      return lower + (upper - lower) * fraction;
    }
    below += in_bucket;
  }
  return kLatencyBucketsSeconds.back();
}

// The protocol's table of names: one list of the api keys for the codecs,
// the logs and /metrics alike.
std::string_view ApiKeyName(int16_t api_key) {
  return daruma::ApiKeyName(static_cast<ApiKey>(api_key));
}

std::string_view ApiMetricLabel(int16_t api_key) {
  const std::string_view name = ApiKeyName(api_key);
  return name == "Unknown" ? "unknown" : name;
}

void RequestMetrics::Record(int16_t api_key, double latency_seconds) {
  if (ApiKeyName(api_key) == "Unknown") api_key = kUnknownApiBucket;
  const auto bound = std::lower_bound(kLatencyBucketsSeconds.begin(), kLatencyBucketsSeconds.end(),
                                      latency_seconds);
  const size_t bucket = size_t(bound - kLatencyBucketsSeconds.begin());
  std::lock_guard lock(mu_);
  ApiLatencyStats& s = by_api_[api_key];
  ++s.count;
  s.sum_seconds += latency_seconds;
  ++s.buckets[bucket];
}

std::map<int16_t, ApiLatencyStats> RequestMetrics::Snapshot() const {
  std::lock_guard lock(mu_);
  return by_api_;
}

}  // namespace daruma::broker
