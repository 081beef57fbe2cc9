// /health and /metrics bodies (health.h, metrics.h) and the HTTP server itself.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "broker/health.h"
#include "broker/http_server.h"
#include "broker/metrics.h"
#include "common/clock.h"
#include "common/forwarding_file_system.h"
#include "log/log.h"
#include "record/record_batch_builder.h"
#include "server_test_util.h"
#include "support/test_support.h"

namespace daruma::broker {
namespace {

using testing::HttpGet;

bool Contains(const std::string& text, const std::string& line) {
  return text.find(line) != std::string::npos;
}

TEST(ServerMetricsTest, QuantileInterpolatesInsideTheBucket) {
  ApiLatencyStats s;
  EXPECT_EQ(EstimateQuantile(s, 0.5), 0);
  s.count = 100;
  s.buckets[2] = 100;  // (0.00025, 0.0005]
  EXPECT_DOUBLE_EQ(EstimateQuantile(s, 0.5), 0.000375);
  EXPECT_DOUBLE_EQ(EstimateQuantile(s, 1.0), 0.0005);
  ApiLatencyStats slow;
  slow.count = 1;
  slow.buckets.back() = 1;  // +Inf
  EXPECT_EQ(EstimateQuantile(slow, 0.99), 10.0);
}

TEST(ServerMetricsTest, RecordFillsTheRightBucket) {
  RequestMetrics m;
  m.Record(0, 0.0001);  // on the bound: le="0.0001"
  m.Record(0, 0.003);   // (0.0025, 0.005]
  m.Record(0, 42.0);    // +Inf
  const auto snap = m.Snapshot();
  const ApiLatencyStats& s = snap.at(0);
  EXPECT_EQ(s.count, 3);
  EXPECT_EQ(s.buckets[0], 1);
  EXPECT_EQ(s.buckets[5], 1);
  EXPECT_EQ(s.buckets[16], 1);
  EXPECT_DOUBLE_EQ(s.sum_seconds, 42.0031);
}

TEST(ServerMetricsTest, PrometheusTextForRequestsAndNetwork) {
  RequestMetrics requests;
  requests.Record(0, 0.0002);
  requests.Record(0, 0.0002);
  requests.Record(1, 0.3);
  NetworkCounters network;
  network.connections_accepted = 7;
  network.connections_active = 2;
  network.frames_too_large = 1;
  MetricsSources sources{BrokerState::kServing, nullptr, false, &requests, &network};
  const std::string text = RenderPrometheus(sources);
  EXPECT_TRUE(Contains(text, "daruma_broker_state{state=\"recovering\"} 0\n"));
  EXPECT_TRUE(Contains(text, "daruma_broker_state{state=\"serving\"} 1\n"));
  EXPECT_TRUE(Contains(text, "# TYPE daruma_requests_total counter\n"));
  EXPECT_TRUE(Contains(text, "daruma_requests_total{api=\"Produce\"} 2\n"));
  EXPECT_TRUE(Contains(text, "daruma_requests_total{api=\"Fetch\"} 1\n"));
  EXPECT_TRUE(Contains(text, "# TYPE daruma_request_latency_seconds histogram\n"));
  EXPECT_TRUE(
      Contains(text, "daruma_request_latency_seconds_bucket{api=\"Produce\",le=\"0.0001\"} 0\n"));
  EXPECT_TRUE(
      Contains(text, "daruma_request_latency_seconds_bucket{api=\"Produce\",le=\"0.00025\"} 2\n"));
  EXPECT_TRUE(
      Contains(text, "daruma_request_latency_seconds_bucket{api=\"Produce\",le=\"+Inf\"} 2\n"));
  EXPECT_TRUE(
      Contains(text, "daruma_request_latency_seconds_bucket{api=\"Fetch\",le=\"0.25\"} 0\n"));
  EXPECT_TRUE(
      Contains(text, "daruma_request_latency_seconds_bucket{api=\"Fetch\",le=\"0.5\"} 1\n"));
  EXPECT_TRUE(Contains(text, "daruma_request_latency_seconds_count{api=\"Fetch\"} 1\n"));
  EXPECT_TRUE(Contains(text, "daruma_request_latency_seconds_sum{api=\"Fetch\"} 0.3\n"));
  EXPECT_TRUE(Contains(
      text, "daruma_request_latency_quantile_seconds{api=\"Fetch\",quantile=\"0.5\"} 0.375\n"));
  EXPECT_TRUE(Contains(text, "daruma_connections_active 2\n"));
  EXPECT_TRUE(Contains(text, "daruma_connections_accepted_total 7\n"));
  EXPECT_TRUE(Contains(text, "daruma_frames_rejected_total{reason=\"too_large\"} 1\n"));
  // No log manager: no partition or recovery families at all.
  EXPECT_FALSE(Contains(text, "daruma_log_end_offset"));
  EXPECT_FALSE(Contains(text, "daruma_recovery_remaining_logs"));
}

TEST(ServerMetricsTest, LabelValuesAreEscaped) {
  EXPECT_EQ(EscapeLabelValue("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
  EXPECT_EQ(EscapeLabelValue("plain-topic.0"), "plain-topic.0");
}

TEST(ServerHealthTest, JsonWithoutALogManager) {
  const nlohmann::json j = HealthJson(BrokerState::kRecovering, nullptr, "");
  EXPECT_EQ(j.dump(),
            R"({"failedPartitions":[],"kafkaListener":null,"logDirs":[],"offlineLogDirs":0,)"
            R"("recovery":{"bytesToScan":0,"remainingLogs":0,)"
            R"("remainingLogsToRecover":{},"remainingSegmentsToRecover":{},"scannedBytes":0,)"
            R"("totalLogs":0},"state":"recovering"})");
  EXPECT_EQ(HealthHttpStatus(BrokerState::kRecovering), 503);
  EXPECT_EQ(HealthHttpStatus(BrokerState::kServing), 200);
  EXPECT_EQ(HealthHttpStatus(BrokerState::kStopping), 503);
  EXPECT_EQ(HealthJson(BrokerState::kServing, nullptr, "127.0.0.1:9092")["kafkaListener"],
            "127.0.0.1:9092");
  // The group coordinator, once the handler exists: loading, then loaded.
  EXPECT_EQ(HealthJson(BrokerState::kServing, nullptr, "",
                       CoordinatorStatus{false, 0})["groupCoordinator"]
                .dump(),
            R"({"groups":0,"state":"loading"})");
  EXPECT_EQ(
      HealthJson(BrokerState::kServing, nullptr, "", CoordinatorStatus{true, 3})["groupCoordinator"]
          .dump(),
      R"({"groups":3,"state":"loaded"})");
  // Whether this start followed an unclean shutdown, from the crash-loop
  // guard's count.
  EXPECT_EQ(HealthJson(BrokerState::kServing, nullptr, "", std::nullopt, std::nullopt, std::nullopt,
                       2)["lastShutdown"]
                .dump(),
            R"({"clean":false,"uncleanStartsInARow":2})");
  EXPECT_EQ(HealthJson(BrokerState::kServing, nullptr, "", std::nullopt, std::nullopt, std::nullopt,
                       0)["lastShutdown"]["clean"],
            true);
}

// Refuses every open under `prefix` as POSIX does for a file whose mode
// refuses us: that partition fails to load, its dir stays online.
class DenyingFileSystem : public ForwardingFileSystem {
 public:
  explicit DenyingFileSystem(std::string prefix) : prefix_(std::move(prefix)) {}
  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    if (path.starts_with(prefix_)) {
      return Status::IoError("open " + path + ": Permission denied")
          .WithDetail(kAccessDeniedDetail);
    }
    return ForwardingFileSystem::Open(path, mode);
  }

 private:
  std::string prefix_;
};

// A partition start-up could not load is named in /health once serving
// (helper-55: "failed to load ... (details: /health)" named nothing).
TEST(ServerHealthTest, APartitionThatFailedToLoadIsNamed) {
  daruma::testing::TempDir dir;
  ManualClock clock(1700000000000);
  for (int32_t p : {0, 1}) {
    auto log = Log::CreateEmpty(FileSystem::Default(), dir.Join(fmt::format("orders-{}", p)),
                                {"orders", p}, LogConfig{}, &clock);
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    auto batch = BuildRecordBatch({}, {RecordInput{}});
    ASSERT_TRUE(batch.ok() && (*log)->AppendAsLeader(*batch, 0).ok());
  }
  DenyingFileSystem fs(dir.Join("orders-1/"));
  LogManager manager({.fs = &fs});
  ASSERT_TRUE(manager.Startup({dir.path()}, LogConfig{}, 1).ok());
  ASSERT_TRUE(manager.HasFailures());
  // While recovering nothing is listed (the report is still being written).
  EXPECT_TRUE(HealthJson(BrokerState::kRecovering, &manager, "")["failedPartitions"].empty());
  const nlohmann::json failed = HealthJson(BrokerState::kServing, &manager, "")["failedPartitions"];
  ASSERT_EQ(failed.size(), 1u) << failed.dump();
  EXPECT_EQ(failed[0]["partition"], "orders-1");
  EXPECT_EQ(failed[0]["state"], "not loaded");
  EXPECT_NE(failed[0]["error"].get<std::string>().find("Permission denied"), std::string::npos)
      << failed.dump();
  EXPECT_EQ(HealthJson(BrokerState::kServing, &manager, "")["offlineLogDirs"], 0);
  ASSERT_TRUE(manager.Shutdown().ok());
}

TEST(ServerHttpTest, SerializesWithLengthAndClose) {
  EXPECT_EQ(SerializeHttpResponse({503, "application/json", "{}"}),
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
            "Content-Length: 2\r\nConnection: close\r\n\r\n{}");
}

class HttpServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ =
        std::make_unique<HttpServer>(io_, [this](std::string_view method, std::string_view path) {
          last_method_ = std::string(method);
          if (path == "/hello") return HttpResponse{200, "text/plain", "hi\n"};
          return HttpResponse{404, "text/plain", "no\n"};
        });
    ASSERT_TRUE(server_->Listen({"127.0.0.1", 0}).ok());
    thread_ = std::thread([this] { io_.run(); });
  }
  void TearDown() override {
    asio::post(io_, [this] { server_->Stop(); });
    thread_.join();  // run() returns once the acceptor is closed and exchanges are done
  }
  asio::io_context io_;
  std::unique_ptr<HttpServer> server_;
  std::thread thread_;
  std::string last_method_;
};

TEST_F(HttpServerTest, RoutesByPathIgnoringTheQuery) {
  testing::HttpResult r = HttpGet(server_->port(), "/hello?x=1");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body, "hi\n");
  EXPECT_TRUE(Contains(r.head, "Content-Length: 3"));
  EXPECT_EQ(last_method_, "GET");
  EXPECT_EQ(HttpGet(server_->port(), "/nope").status, 404);
}

TEST_F(HttpServerTest, OversizedHeadGets431) {
  testing::HttpResult r = HttpGet(server_->port(), "/" + std::string(kMaxRequestHeadBytes, 'a'));
  EXPECT_EQ(r.status, 431);
}

}  // namespace
}  // namespace daruma::broker
