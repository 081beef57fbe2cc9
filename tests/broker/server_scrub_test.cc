// The scrubber in a running `daruma serve` (Broker, broker.h), issue 22's
// proof end to end: a bit flipped in an old segment of a serving broker is
// found by its first pass, /health and /metrics show it, the finding is in
// daruma-scrub-findings.json, and the broker still shuts down cleanly. (What
// Fetch answers for it: scrubber_test.cc, on the real request handler.)
#include <gtest/gtest.h>

#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "broker/broker.h"
#include "log/log_file_names.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"
#include "recovery/scrub_findings.h"
#include "server_test_util.h"
#include "support/test_support.h"

namespace daruma::broker {
namespace {

using daruma::testing::TempDir;
using testing::Eventually;
using testing::HttpGet;
using testing::StubHandler;

// Stops the broker however the test ends (an assertion returning early
// would otherwise leave Run() going, and the future's destructor waiting).
struct StopOnExit {
  Broker& broker;
  ~StopOnExit() { broker.RequestStop(); }
};

// A partition of three segments written by a broker's log manager and shut
// down cleanly (so a start trusts everything below the recovery point and
// reads none of it), whose first segment's second batch then gets a flipped
// bit. Returns that batch's position.
int64_t WriteDamagedPartition(const std::string& log_dir, const TopicPartition& tp) {
  int64_t second = 0;
  std::string dir;
  {
    LogManager manager;
    EXPECT_TRUE(manager.Startup({log_dir}, LogConfig{}, 1).ok());
    Result<Log*> log = manager.GetOrCreateLog(tp, Uuid(), LogConfig{});
    EXPECT_TRUE(log.ok()) << log.status().ToString();
    dir = (*log)->dir();
    for (int segment = 0; segment < 3; ++segment) {
      for (int b = 0; b < 3; ++b) {
        std::vector<RecordInput> records(3);
        for (auto& r : records) r.value = std::string(100, char('a' + b));
        Result<Bytes> batch = BuildRecordBatch({}, records);
        EXPECT_TRUE(batch.ok());
        if (segment == 0 && b == 1) second = (*log)->active_segment_size();
        EXPECT_TRUE((*log)->AppendAsLeader(ByteSpan(*batch), 0).ok());
      }
      if (segment < 2) {
        EXPECT_TRUE((*log)->Roll().ok());
      }
    }
    EXPECT_TRUE(manager.Shutdown().ok());
  }
  const std::string path = LogFileName(dir, 0);
  std::string bytes = daruma::testing::ReadFileToString(path);
  bytes[size_t(second + 80)] ^= 0x20;
  daruma::testing::WriteStringToFile(path, bytes);
  return second;
}

TEST(ServerScrubTest, RunningBrokerFindsAFlippedBitInAnOldSegmentWithinOnePass) {
  TempDir tmp;
  const std::string log_dir = tmp.Join("data");
  const TopicPartition tp{"old", 0};
  const int64_t damaged = WriteDamagedPartition(log_dir, tp);

  BrokerOptions o;
  o.config.log_dirs = {log_dir};
  o.settings.kafka_listener = {"127.0.0.1", 0};
  o.settings.http_listener = {"127.0.0.1", 0};
  o.settings.scrub.initial_delay_ms = 0;
  o.handle_signals = false;
  o.make_handler = [](const HandlerArgs&) {
    return Result<std::unique_ptr<FrameHandler>>(std::unique_ptr<FrameHandler>(
        new StubHandler([](std::vector<uint8_t> f, Respond r) { r(std::move(f), false); })));
  };
  Broker broker(std::move(o));
  std::future<Status> run = std::async(std::launch::async, [&] { return broker.Run(); });
  StopOnExit stop{broker};
  ASSERT_TRUE(Eventually([&] { return broker.state() == BrokerState::kServing; }, 20000));

  nlohmann::json health;
  ASSERT_TRUE(Eventually(
      [&] {
        health = nlohmann::json::parse(HttpGet(broker.http_port(), "/health").body);
        return health.contains("scrub") && health["scrub"]["passesCompleted"].get<int64_t>() >= 1;
      },
      20000))
      << health.dump();
  const nlohmann::json& scrub = health["scrub"];
  EXPECT_EQ(scrub["enabled"], true);
  EXPECT_EQ(scrub["pass"]["segmentsTotal"], 2);  // the two rolled segments, not the active one
  ASSERT_EQ(scrub["findings"].size(), 1u) << scrub.dump();
  const nlohmann::json& f = scrub["findings"][0];
  EXPECT_EQ(f["topic"], "old");
  EXPECT_EQ(f["segment"], 0);
  EXPECT_EQ(f["position"], damaged);
  EXPECT_EQ(f["firstOffset"], 3);
  EXPECT_EQ(f["endOffset"], 6);
  EXPECT_EQ(f["kind"], "bad_crc");

  const std::string metrics = HttpGet(broker.http_port(), "/metrics").body;
  EXPECT_NE(metrics.find("daruma_scrub_damaged_ranges 1\n"), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("daruma_scrub_findings_total 1\n"), std::string::npos);
  EXPECT_NE(metrics.find("daruma_scrub_passes_total 1\n"), std::string::npos);

  broker.RequestStop();
  ASSERT_EQ(run.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_TRUE(run.get().ok());
  auto file = ReadScrubFindings(FileSystem::Default(), log_dir);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  ASSERT_EQ(file->findings.size(), 1u);
  EXPECT_EQ(file->findings[0].damage.position, damaged);
  EXPECT_EQ(file->findings[0].file, "old-0/00000000000000000000.log");
}

TEST(ServerScrubTest, DisabledScrubReadsNothingAndSaysSo) {
  TempDir tmp;
  const std::string log_dir = tmp.Join("data");
  WriteDamagedPartition(log_dir, {"old", 0});
  BrokerOptions o;
  o.config.log_dirs = {log_dir};
  o.settings.kafka_listener = {"127.0.0.1", 0};
  o.settings.http_listener = {"127.0.0.1", 0};
  o.settings.scrub.enable = false;
  o.settings.scrub.initial_delay_ms = 0;
  o.handle_signals = false;
  o.make_handler = [](const HandlerArgs&) {
    return Result<std::unique_ptr<FrameHandler>>(std::unique_ptr<FrameHandler>(
        new StubHandler([](std::vector<uint8_t> f, Respond r) { r(std::move(f), false); })));
  };
  Broker broker(std::move(o));
  std::future<Status> run = std::async(std::launch::async, [&] { return broker.Run(); });
  StopOnExit stop{broker};
  ASSERT_TRUE(Eventually([&] { return broker.state() == BrokerState::kServing; }, 20000));
  const nlohmann::json health = nlohmann::json::parse(HttpGet(broker.http_port(), "/health").body);
  EXPECT_EQ(health["scrub"]["state"], "disabled");
  EXPECT_EQ(health["scrub"]["bytesScrubbed"], 0);
  EXPECT_NE(HttpGet(broker.http_port(), "/metrics").body.find("daruma_scrub_enabled 0\n"),
            std::string::npos);
  broker.RequestStop();
  ASSERT_EQ(run.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  EXPECT_TRUE(run.get().ok());
}

}  // namespace
}  // namespace daruma::broker
