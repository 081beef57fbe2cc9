// /metrics against the Prometheus text format (prometheus_text.h): first the
// reader itself, one broken rule per case, then Daruma's whole output.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "broker/metrics.h"
#include "prometheus_text.h"

namespace daruma::broker {
namespace {

using testing::ParsePrometheusText;

std::string Errors(const testing::PrometheusParse& p) {
  std::string all;
  for (const std::string& e : p.errors) all += e + "\n";
  return all;
}

constexpr char kValid[] =
    "# HELP a_total A counter\n"
    "# TYPE a_total counter\n"
    "a_total{api=\"x\\\"y\\\\z\\n\"} 1\n"
    "a_total{api=\"w\"} 2.5e3\n"
    "# HELP h A histogram\n"
    "# TYPE h histogram\n"
    "h_bucket{le=\"0.5\"} 1\n"
    "h_bucket{le=\"+Inf\"} 2\n"
    "h_sum 0.7\n"
    "h_count 2\n";

TEST(PrometheusTextReaderTest, AcceptsAValidText) {
  const auto p = ParsePrometheusText(kValid);
  EXPECT_TRUE(p.errors.empty()) << Errors(p);
  ASSERT_EQ(p.samples.size(), 6u);
  EXPECT_EQ(p.samples[0].labels[0].second, "x\"y\\z\n");
  EXPECT_EQ(p.samples[1].value, 2500);
}

TEST(PrometheusTextReaderTest, RejectsADuplicateSeries) {
  EXPECT_FALSE(ParsePrometheusText("# HELP a A\n# TYPE a gauge\na{x=\"1\",y=\"2\"} 1\n"
                                   "a{y=\"2\",x=\"1\"} 2\n")
                   .errors.empty());
}

TEST(PrometheusTextReaderTest, RejectsAFamilySplitInTwo) {
  EXPECT_FALSE(ParsePrometheusText("# HELP a A\n# TYPE a gauge\n# HELP b B\n# TYPE b gauge\n"
                                   "a 1\nb 1\na{x=\"1\"} 1\n")
                   .errors.empty());
}

TEST(PrometheusTextReaderTest, RejectsABadEscapeInALabelValue) {
  EXPECT_FALSE(ParsePrometheusText("# HELP a A\n# TYPE a gauge\na{x=\"\\t\"} 1\n").errors.empty());
}

TEST(PrometheusTextReaderTest, RejectsAnUnquotedOrUnterminatedLabelValue) {
  EXPECT_FALSE(ParsePrometheusText("# HELP a A\n# TYPE a gauge\na{x=1} 1\n").errors.empty());
  EXPECT_FALSE(ParsePrometheusText("# HELP a A\n# TYPE a gauge\na{x=\"1} 1\n").errors.empty());
}

TEST(PrometheusTextReaderTest, RejectsANonNumericValue) {
  EXPECT_FALSE(ParsePrometheusText("# HELP a A\n# TYPE a gauge\na one\n").errors.empty());
  EXPECT_FALSE(ParsePrometheusText("# HELP a A\n# TYPE a gauge\na inf\n").errors.empty());
}

TEST(PrometheusTextReaderTest, RejectsTypeAfterSamplesOrTwice) {
  EXPECT_FALSE(ParsePrometheusText("a 1\n# HELP a A\n# TYPE a gauge\n").errors.empty());
  EXPECT_FALSE(
      ParsePrometheusText("# HELP a A\n# TYPE a gauge\n# TYPE a counter\na 1\n").errors.empty());
}

TEST(PrometheusTextReaderTest, RejectsATypeWithoutHelpAndAnUnknownType) {
  EXPECT_FALSE(ParsePrometheusText("# TYPE a gauge\na 1\n").errors.empty());
  EXPECT_FALSE(ParsePrometheusText("# HELP a A\n# TYPE a meter\na 1\n").errors.empty());
}

TEST(PrometheusTextReaderTest, RejectsABucketWithoutLe) {
  EXPECT_FALSE(ParsePrometheusText("# HELP h H\n# TYPE h histogram\nh_bucket 1\n").errors.empty());
}

TEST(PrometheusTextReaderTest, RejectsALabelTwiceAndABadName) {
  EXPECT_FALSE(
      ParsePrometheusText("# HELP a A\n# TYPE a gauge\na{x=\"1\",x=\"2\"} 1\n").errors.empty());
  EXPECT_FALSE(ParsePrometheusText("9a 1\n").errors.empty());
}

// Every api key a client can send: one series per Kafka API that has a name,
// one "unknown" series for all the rest, and the whole text stays valid.
TEST(MetricsFormatTest, OddApiKeysShareOneUnknownSeries) {
  RequestMetrics requests;
  int64_t odd = 0;
  for (int key = -32768; key <= 32767; ++key) {
    requests.Record(int16_t(key), 0.001);
    if (ApiKeyName(int16_t(key)) == "Unknown") ++odd;
  }
  NetworkCounters network;
  MetricsSources sources{BrokerState::kServing, nullptr, false, &requests, &network};
  const std::string text = RenderPrometheus(sources);
  const auto p = ParsePrometheusText(text);
  EXPECT_TRUE(p.errors.empty()) << Errors(p);
  int series = 0;
  int unknown = 0;
  for (const auto& s : p.samples) {
    if (s.name != "daruma_requests_total") continue;
    ++series;
    if (s.labels.at(0).second == "unknown") {
      ++unknown;
      EXPECT_EQ(s.value, double(odd));
    }
  }
  EXPECT_EQ(unknown, 1);
  // The named APIs (40 today: every one served, SASL's two too) plus
  // "unknown".
  EXPECT_EQ(series, 65536 - odd + 1);
  EXPECT_LE(series, 41);
  EXPECT_EQ(text.find("api=\"Unknown\""), std::string::npos);
}

TEST(MetricsFormatTest, EveryFamilyWithoutLogsIsValid) {
  RequestMetrics requests;
  requests.Record(0, 0.0002);
  requests.Record(1, 0.3);
  requests.Record(18, 20.0);
  requests.Record(999, 0.1);
  NetworkCounters network;
  network.frames_too_large = 2;
  for (BrokerState state : {BrokerState::kRecovering, BrokerState::kServing}) {
    MetricsSources sources{state, nullptr, false, &requests, &network, 3};
    const auto p = ParsePrometheusText(RenderPrometheus(sources));
    EXPECT_TRUE(p.errors.empty()) << Errors(p);
  }
}

TEST(MetricsFormatTest, DelayedOperationsAreOneSeriesPerKind) {
  RequestMetrics requests;
  NetworkCounters network;
  MetricsSources sources{BrokerState::kServing, nullptr, false, &requests, &network, 1};
  sources.delayed_operations = {{DelayedOperationKind::kFetchPartition, 1, 4},
                                {DelayedOperationKind::kMemberHeartbeat, 12, 2}};
  const auto p = ParsePrometheusText(RenderPrometheus(sources));
  EXPECT_TRUE(p.errors.empty()) << Errors(p);
  std::map<std::string, double> waiting, expired;
  for (const auto& s : p.samples) {
    if (s.name == "daruma_delayed_operations") waiting[s.labels.at(0).second] = s.value;
    if (s.name == "daruma_delayed_operations_expired_total") {
      expired[s.labels.at(0).second] = s.value;
    }
  }
  EXPECT_EQ(waiting,
            (std::map<std::string, double>{{"fetch_partition", 1}, {"member_heartbeat", 12}}));
  EXPECT_EQ(expired,
            (std::map<std::string, double>{{"fetch_partition", 4}, {"member_heartbeat", 2}}));
}

}  // namespace
}  // namespace daruma::broker
