#include "broker/request_metrics.h"

#include <algorithm>

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

std::string_view ApiKeyName(int16_t api_key) {
  switch (api_key) {
    case 0:
      return "Produce";
    case 1:
      return "Fetch";
    case 2:
      return "ListOffsets";
    case 3:
      return "Metadata";
    case 8:
      return "OffsetCommit";
    case 9:
      return "OffsetFetch";
    case 10:
      return "FindCoordinator";
    case 11:
      return "JoinGroup";
    case 12:
      return "Heartbeat";
    case 13:
      return "LeaveGroup";
    case 14:
      return "SyncGroup";
    case 15:
      return "DescribeGroups";
    case 16:
      return "ListGroups";
    case 17:
      return "SaslHandshake";
    case 18:
      return "ApiVersions";
    case 19:
      return "CreateTopics";
    case 20:
      return "DeleteTopics";
    case 21:
      return "DeleteRecords";
    case 22:
      return "InitProducerId";
    case 23:
      return "OffsetForLeaderEpoch";
    case 24:
      return "AddPartitionsToTxn";
    case 25:
      return "AddOffsetsToTxn";
    case 26:
      return "EndTxn";
    case 27:
      return "WriteTxnMarkers";
    case 28:
      return "TxnOffsetCommit";
    case 32:
      return "DescribeConfigs";
    case 33:
      return "AlterConfigs";
    case 35:
      return "DescribeLogDirs";
    case 36:
      return "SaslAuthenticate";
    case 37:
      return "CreatePartitions";
    case 43:
      return "ElectLeaders";
    case 44:
      return "IncrementalAlterConfigs";
    case 45:
      return "AlterPartitionReassignments";
    case 46:
      return "ListPartitionReassignments";
    case 60:
      return "DescribeCluster";
    case 61:
      return "DescribeProducers";
    case 65:
      return "DescribeTransactions";
    case 66:
      return "ListTransactions";
    default:
      return "Unknown";
  }
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
