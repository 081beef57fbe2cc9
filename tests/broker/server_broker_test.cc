// Broker (broker.h): start-up order, /health and /metrics through a real HTTP
// exchange, the crash-loop guard at start, and the signal-free shutdown path
// (RequestStop), with a stub request handler.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <future>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "broker/broker.h"
#include "broker/crash_loop_guard.h"
#include "broker/dead_dir_file_system.h"
#include "broker/metrics.h"
#include "common/forwarding_file_system.h"
#include "log/clean_shutdown_file.h"
#include "log/meta_properties.h"
#include "prometheus_text.h"
#include "record/record_batch_builder.h"
#include "recovery/dir_lock.h"
#include "server_test_util.h"
#include "support/test_support.h"

namespace daruma::broker {
namespace {

using daruma::testing::TempDir;
using daruma::testing::WriteStringToFile;
using testing::Eventually;
using testing::FrameClient;
using testing::HttpGet;
using testing::StubHandler;

// Forwards to the POSIX file system, but ListDir(gated_path) blocks until
// Open() is called: LogManager::Startup lists each log dir while preparing,
// so the broker stays "recovering" as long as the test wants.
class GatedFileSystem final : public ForwardingFileSystem {
 public:
  explicit GatedFileSystem(std::string gated_path) : gated_(std::move(gated_path)) {}
  void OpenGate() {
    std::lock_guard lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool reached() {
    std::lock_guard lock(mu_);
    return reached_;
  }

  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    if (path == gated_) {
      std::unique_lock lock(mu_);
      reached_ = true;
      cv_.wait(lock, [this] { return open_; });
    }
    return ForwardingFileSystem::ListDir(path);
  }

 private:
  std::string gated_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = false;
  bool reached_ = false;
};

// A Broker on ephemeral ports in a TempDir, Run() on a thread.
class BrokerHarness {
 public:
  explicit BrokerHarness(const std::string& log_dir, FileSystem* fs = FileSystem::Default(),
                         StubHandler::OnFrame on_frame = nullptr) {
    BrokerOptions o;
    o.config.log_dirs = {log_dir};
    o.settings.kafka_listener = {"127.0.0.1", 0};
    o.settings.http_listener = {"127.0.0.1", 0};
    o.log_manager.fs = fs;
    o.handle_signals = false;
    o.drain_timeout = std::chrono::milliseconds(5000);
    if (!on_frame) {
      on_frame = [](std::vector<uint8_t> f, Respond r) { r(std::move(f), false); };
    }
    o.make_handler = [this, on_frame](const HandlerArgs& args) {
      args_ = args;
      stub_ = new StubHandler(on_frame);
      return Result<std::unique_ptr<FrameHandler>>(std::unique_ptr<FrameHandler>(stub_));
    };
    options_ = std::move(o);
  }
  BrokerOptions& options() { return options_; }
  void Start() {
    broker_ = std::make_unique<Broker>(std::move(options_));
    result_ = std::async(std::launch::async, [this] { return broker_->Run(); });
  }
  Broker& broker() { return *broker_; }
  Status StopAndWait() {
    broker_->RequestStop();
    return Wait();
  }
  Status Wait() {
    if (result_.wait_for(std::chrono::seconds(20)) != std::future_status::ready) {
      return Status::IoError("broker did not stop within 20 s");
    }
    return result_.get();
  }
  const HandlerArgs& handler_args() const { return args_; }

 private:
  BrokerOptions options_;
  std::unique_ptr<Broker> broker_;
  std::future<Status> result_;
  HandlerArgs args_;
  StubHandler* stub_ = nullptr;
};

TEST(ServerBrokerTest, HttpAnswersRecoveringBeforeTheKafkaPortBinds) {
  TempDir dir;
  const std::string log_dir = dir.Join("data");
  GatedFileSystem fs(log_dir);
  BrokerHarness h(log_dir, &fs);
  h.Start();
  ASSERT_TRUE(Eventually([&] { return fs.reached() && h.broker().http_port() != 0; }));

  testing::HttpResult health = HttpGet(h.broker().http_port(), "/health");
  EXPECT_EQ(health.status, 503);
  const nlohmann::json j = nlohmann::json::parse(health.body);
  EXPECT_EQ(j["state"], "recovering");
  EXPECT_TRUE(j["kafkaListener"].is_null());
  EXPECT_TRUE(j["recovery"].contains("remainingLogsToRecover"));
  EXPECT_TRUE(j["recovery"].contains("remainingSegmentsToRecover"));
  EXPECT_EQ(h.broker().kafka_port(), 0);
  EXPECT_EQ(h.broker().state(), BrokerState::kRecovering);
  testing::HttpResult metrics = HttpGet(h.broker().http_port(), "/metrics");
  EXPECT_EQ(metrics.status, 200);
  EXPECT_NE(metrics.body.find("daruma_broker_state{state=\"recovering\"} 1\n"), std::string::npos);
  EXPECT_EQ(metrics.body.find("daruma_log_end_offset"), std::string::npos);

  fs.OpenGate();
  ASSERT_TRUE(Eventually([&] { return h.broker().state() == BrokerState::kServing; }));
  const uint16_t port = h.broker().kafka_port();
  ASSERT_NE(port, 0);
  health = HttpGet(h.broker().http_port(), "/health");
  EXPECT_EQ(health.status, 200);
  const nlohmann::json serving = nlohmann::json::parse(health.body);
  EXPECT_EQ(serving["state"], "serving");
  EXPECT_EQ(serving["kafkaListener"], "127.0.0.1:" + std::to_string(port));
  EXPECT_EQ(serving["recovery"]["remainingLogsToRecover"][log_dir], 0);
  EXPECT_EQ(h.handler_args().advertised_host, "127.0.0.1");
  EXPECT_EQ(h.handler_args().advertised_port, port);
  EXPECT_EQ(HttpGet(h.broker().http_port(), "/nope").status, 404);
  EXPECT_TRUE(h.StopAndWait().ok());
}

// /health says whether this start followed an unclean shutdown (the
// crash-loop guard's count), so a monitor need not read the log.
TEST(ServerBrokerTest, HealthSaysWhetherTheLastShutdownWasClean) {
  TempDir dir;
  const std::string log_dir = dir.Join("data");
  ASSERT_TRUE(FileSystem::Default()->CreateDir(log_dir).ok());
  {
    CrashLoopGuard guard(FileSystem::Default(), log_dir, 5);
    ASSERT_TRUE(guard.RecordStart().ok());  // a start that never shut down
  }
  for (const bool clean : {false, true}) {
    BrokerHarness h(log_dir);
    h.Start();
    ASSERT_TRUE(Eventually([&] { return h.broker().state() == BrokerState::kServing; }));
    const nlohmann::json j = nlohmann::json::parse(HttpGet(h.broker().http_port(), "/health").body);
    EXPECT_EQ(j["lastShutdown"]["clean"], clean) << j.dump();
    EXPECT_EQ(j["lastShutdown"]["uncleanStartsInARow"], clean ? 0 : 1) << j.dump();
    EXPECT_TRUE(h.StopAndWait().ok());
  }
}

// What start-up recovery cut is named in the broker's log, not only in a
// report the running broker's operator cannot ask for (helper-54: a torn
// tail went to the quarantine with nothing but "recovered 1 partition(s)").
TEST(ServerBrokerTest, ATornTailCutAtStartUpIsNamedInTheLog) {
  TempDir dir;
  const std::string log_dir = dir.Join("data");
  const TopicPartition tp{"orders", 0};
  {
    ASSERT_TRUE(FileSystem::Default()->CreateDir(log_dir).ok());
    auto log = Log::CreateEmpty(FileSystem::Default(), JoinPath(log_dir, tp.ToString()), tp,
                                LogConfig{}, Clock::System());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    RecordInput record;
    record.value = "v";
    Result<Bytes> batch = BuildRecordBatch({}, {record});
    ASSERT_TRUE(batch.ok());
    ASSERT_TRUE((*log)->AppendAsLeader(ByteSpan(*batch), 0).ok());
    ASSERT_TRUE((*log)->Close().ok());
  }
  // Half a batch after the whole one, and no clean-shutdown marker: a crash.
  {
    std::ofstream torn(JoinPath(log_dir, "orders-0/00000000000000000000.log"),
                       std::ios::binary | std::ios::app);
    torn << std::string(30, 'x');
  }
  std::filesystem::remove(JoinPath(log_dir, kCleanShutdownFileName));
  std::ostringstream lines;
  BrokerHarness h(log_dir);
  h.options().log = &lines;
  h.Start();
  ASSERT_TRUE(Eventually([&] { return h.broker().state() == BrokerState::kServing; }));
  EXPECT_TRUE(h.StopAndWait().ok());
  const std::string text = lines.str();
  EXPECT_NE(text.find("level=WARN event=partition_recovered_with_damage partition=orders-0 "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" truncated_bytes=30 quarantined_bytes=30 log_end_offset=1"),
            std::string::npos)
      << text;
}

// Kafka logs every segment retention deletes and why; so does the broker, one
// line per breach, so an operator who finds old messages gone can see where.
TEST(ServerBrokerTest, RetentionDeletionsAreLoggedWithTheirBreach) {
  TempDir dir;
  const std::string log_dir = dir.Join("data");
  const TopicPartition tp{"orders", 0};
  const int64_t month_ago = Clock::System()->NowMs() - 30LL * 24 * 3600 * 1000;
  {
    ASSERT_TRUE(FileSystem::Default()->CreateDir(log_dir).ok());
    LogConfig one_batch_per_segment;
    one_batch_per_segment.segment_bytes = 100;
    auto log = Log::CreateEmpty(FileSystem::Default(), JoinPath(log_dir, tp.ToString()), tp,
                                one_batch_per_segment, Clock::System());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    for (int i = 0; i < 3; ++i) {
      RecordInput record;
      record.timestamp = month_ago;
      record.value = "v";
      Result<Bytes> batch = BuildRecordBatch({}, {record});
      ASSERT_TRUE(batch.ok());
      ASSERT_TRUE((*log)->AppendAsLeader(ByteSpan(*batch), 0).ok());
    }
    ASSERT_EQ((*log)->num_segments(), 3u);
    ASSERT_TRUE((*log)->Close().ok());
  }
  std::ostringstream lines;
  BrokerHarness h(log_dir);
  h.options().log = &lines;
  h.options().log_manager.jobs.enabled = true;
  h.options().log_manager.jobs.initial_delay_ms = 0;
  h.options().log_manager.jobs.retention_check_interval_ms = 10;
  h.Start();
  ASSERT_TRUE(Eventually([&] { return h.broker().state() == BrokerState::kServing; }));
  Log* log = h.handler_args().log_manager->GetLog(tp);
  ASSERT_NE(log, nullptr);
  log->UpdateHighWatermark(log->log_end_offset());  // what the real handler does
  // Retention.ms (7 days by default) removes all three; a roll keeps one.
  EXPECT_TRUE(Eventually([&] { return log->log_start_offset() == 3; }));
  EXPECT_TRUE(h.StopAndWait().ok());
  const std::string text = lines.str();
  EXPECT_NE(text.find("level=INFO event=segments_deleted topic=orders partition=0 "
                      "cause=retention.ms limit=604800000 segments=3 first_base_offset=0 "
                      "last_base_offset=2 bytes="),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(" log_start_offset=3\n"), std::string::npos) << text;
}

TEST(ServerBrokerTest, MetricsShowPartitionsAndRequests) {
  TempDir dir;
  const std::string log_dir = dir.Join("data");
  const TopicPartition tp{"orders", 2};
  int64_t batch_size = 0;
  {
    ASSERT_TRUE(FileSystem::Default()->CreateDir(log_dir).ok());
    auto log = Log::CreateEmpty(FileSystem::Default(), JoinPath(log_dir, tp.ToString()), tp,
                                LogConfig{}, Clock::System());
    ASSERT_TRUE(log.ok()) << log.status().ToString();
    std::vector<RecordInput> records(3);
    for (auto& r : records) r.value = "v";
    Result<Bytes> batch = BuildRecordBatch({}, records);
    ASSERT_TRUE(batch.ok());
    batch_size = int64_t(batch->size());
    ASSERT_TRUE((*log)->AppendAsLeader(ByteSpan(*batch), 0).ok());
    ASSERT_TRUE((*log)->Close().ok());
  }
  BrokerHarness h(log_dir);
  h.Start();
  ASSERT_TRUE(Eventually([&] { return h.broker().state() == BrokerState::kServing; }));
  {
    FrameClient c(h.broker().kafka_port());
    c.SendFrame({0, 3, 0, 4, 0, 0, 0, 1});  // Metadata (stub echoes)
    ASSERT_TRUE(c.ReadFrame().has_value());
  }
  const std::string m = HttpGet(h.broker().http_port(), "/metrics").body;
  const std::string labels = "{topic=\"orders\",partition=\"2\"}";
  EXPECT_NE(m.find("daruma_log_start_offset" + labels + " 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("daruma_log_end_offset" + labels + " 3\n"), std::string::npos);
  EXPECT_NE(m.find("daruma_log_high_watermark" + labels), std::string::npos);
  EXPECT_NE(m.find("daruma_log_size_bytes" + labels + " " + std::to_string(batch_size) + "\n"),
            std::string::npos);
  EXPECT_NE(m.find("daruma_log_segments" + labels + " 1\n"), std::string::npos);
  EXPECT_NE(m.find("daruma_requests_total{api=\"Metadata\"} 1\n"), std::string::npos);
  EXPECT_NE(m.find("daruma_recovery_remaining_logs{dir=\"" + log_dir + "\"} 0\n"),
            std::string::npos);
  EXPECT_NE(m.find("daruma_recovery_logs_total 1\n"), std::string::npos);
  EXPECT_NE(m.find("daruma_connections_accepted_total 1\n"), std::string::npos);
  EXPECT_TRUE(h.StopAndWait().ok());
}

// The whole /metrics of a serving broker reads as valid Prometheus text: a log
// dir whose name needs escaping, and clients sending api keys Kafka never
// named, which all land in one api="unknown" series.
TEST(ServerBrokerTest, MetricsAreValidPrometheusTextWhateverClientsSend) {
  TempDir dir;
  const std::string log_dir = dir.Join("da\"ta\\1");
  BrokerHarness h(log_dir);
  h.Start();
  ASSERT_TRUE(Eventually([&] { return h.broker().state() == BrokerState::kServing; }));
  for (uint8_t key_low : {0x03, 0x63, 0x64, 0xff}) {  // Metadata, 99, 100, 255
    FrameClient c(h.broker().kafka_port());
    c.SendFrame({0, key_low, 0, 0, 0, 0, 0, 1});
    ASSERT_TRUE(c.ReadFrame().has_value());  // the stub echoes every frame
  }
  const std::string m = HttpGet(h.broker().http_port(), "/metrics").body;
  const testing::PrometheusParse p = testing::ParsePrometheusText(m);
  std::string errors;
  for (const std::string& e : p.errors) errors += e + "\n";
  EXPECT_TRUE(p.errors.empty()) << errors << m;
  EXPECT_NE(m.find("daruma_requests_total{api=\"unknown\"} 3\n"), std::string::npos) << m;
  EXPECT_NE(m.find("dir=\"" + EscapeLabelValue(log_dir) + "\""), std::string::npos) << m;
  EXPECT_TRUE(h.StopAndWait().ok());
}

// The signal-free shutdown path: a request in flight when the stop comes is
// answered, then the logs shut down cleanly (marker written, guard reset).
TEST(ServerBrokerTest, StopFinishesInFlightRequestThenShutsDownCleanly) {
  TempDir dir;
  const std::string log_dir = dir.Join("data");
  std::atomic<int> handled{0};
  BrokerHarness h(log_dir, FileSystem::Default(), [&](std::vector<uint8_t> f, Respond r) {
    ++handled;
    // Answer 300 ms later from another thread; the server re-posts it.
    std::thread([f = std::move(f), r] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      r(f, false);
    }).detach();
  });
  h.Start();
  ASSERT_TRUE(Eventually([&] { return h.broker().state() == BrokerState::kServing; }));
  EXPECT_TRUE(FileSystem::Default()->Exists(JoinPath(log_dir, kCrashLoopFileName)));
  FrameClient c(h.broker().kafka_port());
  c.SendFrame({0, 0, 0, 7, 0, 0, 0, 42});
  ASSERT_TRUE(Eventually([&] { return handled.load() == 1; }));
  h.broker().RequestStop();
  auto r = c.ReadFrame();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (std::vector<uint8_t>{0, 0, 0, 7, 0, 0, 0, 42}));
  EXPECT_TRUE(c.ClosedByPeer());
  Status st = h.Wait();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(FileSystem::Default()->Exists(JoinPath(log_dir, kCleanShutdownFileName)));
  EXPECT_FALSE(FileSystem::Default()->Exists(JoinPath(log_dir, kCrashLoopFileName)));
  EXPECT_FALSE(
      FileSystem::Default()->Exists(JoinPath(log_dir, kCrashLoopFileName + std::string(".tmp"))));
}

// `daruma serve` stops on SIGTERM: the handler begins the stop and re-arms
// itself. It used to re-arm through a reference to a destroyed local (a crash
// at shutdown in an -O3 build; ASan reports it as a use after scope).
TEST(ServerBrokerTest, SigtermStopsTheBrokerCleanly) {
  TempDir dir;
  const std::string log_dir = dir.Join("data");
  BrokerHarness h(log_dir);
  h.options().handle_signals = true;
  h.Start();
  ASSERT_TRUE(Eventually([&] { return h.broker().state() == BrokerState::kServing; }));
  ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);
  Status st = h.Wait();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(FileSystem::Default()->Exists(JoinPath(log_dir, kCleanShutdownFileName)));
}

TEST(ServerBrokerTest, StopDuringRecoveryNeverBindsKafkaAndShutsDownCleanly) {
  TempDir dir;
  const std::string log_dir = dir.Join("data");
  GatedFileSystem fs(log_dir);
  BrokerHarness h(log_dir, &fs);
  h.Start();
  ASSERT_TRUE(Eventually([&] { return fs.reached() && h.broker().http_port() != 0; }));
  h.broker().RequestStop();
  ASSERT_TRUE(Eventually([&] { return h.broker().state() == BrokerState::kStopping; }));
  const nlohmann::json j = nlohmann::json::parse(HttpGet(h.broker().http_port(), "/health").body);
  EXPECT_EQ(j["state"], "stopping");
  fs.OpenGate();
  Status st = h.Wait();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(h.broker().kafka_port(), 0);
  EXPECT_TRUE(FileSystem::Default()->Exists(JoinPath(log_dir, kCleanShutdownFileName)));
  EXPECT_FALSE(FileSystem::Default()->Exists(JoinPath(log_dir, kCrashLoopFileName)));
}

TEST(ServerBrokerTest, CrashLoopGuardRefusesBeforeRecovery) {
  TempDir dir;
  const std::string log_dir = dir.Join("data");
  ASSERT_TRUE(FileSystem::Default()->CreateDir(log_dir).ok());
  WriteStringToFile(JoinPath(log_dir, kCrashLoopFileName), "unclean.starts=5\n");
  BrokerHarness h(log_dir);
  h.Start();
  Status st = h.Wait();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kOutOfRange);
  EXPECT_NE(st.message().find("--clear-crash-loop"), std::string::npos);
  EXPECT_EQ(h.broker().kafka_port(), 0);
  // Recovery never ran: no lock file, no marker.
  EXPECT_FALSE(FileSystem::Default()->Exists(JoinPath(log_dir, kCleanShutdownFileName)));
}

// A second broker on a dir a live broker holds refuses before it touches the
// live broker's crash-loop count (it used to count a start and report the
// live broker's start as an unclean shutdown first).
TEST(ServerBrokerTest, ASecondBrokerOnAHeldDirRefusesWithoutCountingAStart) {
  TempDir dir;
  const std::string log_dir = dir.Join("data");
  ASSERT_TRUE(FileSystem::Default()->CreateDir(log_dir).ok());
  WriteStringToFile(JoinPath(log_dir, kCrashLoopFileName), "unclean.starts=1\n");
  auto held = DirLock::Acquire(log_dir);
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  std::ostringstream log;
  BrokerHarness h(log_dir);
  h.options().log = &log;
  h.Start();
  Status st = h.Wait();
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(DirLock::IsHeldElsewhere(st)) << st.ToString();
  EXPECT_NE(st.message().find("log dir " + log_dir + " is locked by another process"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(h.broker().kafka_port(), 0);
  EXPECT_EQ(daruma::testing::ReadFileToString(JoinPath(log_dir, kCrashLoopFileName)),
            "unclean.starts=1\n");
  EXPECT_EQ(log.str().find("unclean"), std::string::npos) << log.str();
}

// A first log dir that fails (dead, read-only, full) is taken offline at
// start-up as Kafka does; the crash-loop guard counts in the next dir instead
// of refusing the start.
TEST(ServerBrokerTest, AFailedFirstLogDirLeavesTheGuardToTheNextAndStarts) {
  TempDir dir;
  const std::string a = dir.Join("a");
  const std::string b = dir.Join("b");
  ASSERT_TRUE(FileSystem::Default()->CreateDir(a).ok());
  testing::DeadDirFileSystem fs({a});
  BrokerHarness h(a, &fs);
  h.options().config.log_dirs = {a, b};
  h.Start();
  ASSERT_TRUE(Eventually([&] { return h.broker().state() == BrokerState::kServing; }));
  EXPECT_TRUE(h.handler_args().log_manager->failure_channel().IsOffline(a));
  EXPECT_TRUE(FileSystem::Default()->Exists(JoinPath(b, kCrashLoopFileName)));
  Status st = h.StopAndWait();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_FALSE(FileSystem::Default()->Exists(JoinPath(b, kCrashLoopFileName)));
}

// Kafka's LogManager.handleLogDirFailure halts the broker once every log dir
// has failed: one dir offline leaves it serving the other; the last one
// stops it, not cleanly (no marker, the crash-loop guard keeps the start),
// with the dirs named in an ERROR line and Run() failing (`serve` exits 1).
TEST(ServerBrokerTest, TheLastLogDirGoingOfflineStopsTheBrokerNotCleanly) {
  TempDir dir;
  const std::string a = dir.Join("a");
  const std::string b = dir.Join("b");
  std::ostringstream lines;
  BrokerHarness h(a);
  h.options().config.log_dirs = {a, b};
  h.options().log = &lines;
  h.Start();
  ASSERT_TRUE(Eventually([&] { return h.broker().state() == BrokerState::kServing; }));
  LogDirFailureChannel& failures = h.handler_args().log_manager->failure_channel();
  failures.MaybeAddOfflineLogDir(a, Status::IoError("disk gone"));
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_EQ(h.broker().state(), BrokerState::kServing);
  EXPECT_EQ(HttpGet(h.broker().http_port(), "/health").status, 200);

  failures.MaybeAddOfflineLogDir(b, Status::IoError("disk gone too"));
  Status st = h.Wait();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(st.message().find("all log dirs in " + a + ", " + b + " have failed"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(h.broker().state(), BrokerState::kStopping);
  EXPECT_NE(lines.str().find("level=ERROR event=all_log_dirs_offline"), std::string::npos)
      << lines.str();
  EXPECT_FALSE(FileSystem::Default()->Exists(JoinPath(b, kCleanShutdownFileName)));
  EXPECT_TRUE(FileSystem::Default()->Exists(JoinPath(a, kCrashLoopFileName)));
}

TEST(ServerBrokerTest, KafkaPortInUseFailsButStillShutsDownTheLogsCleanly) {
  TempDir dir;
  const std::string log_dir = dir.Join("data");
  asio::io_context io;
  asio::ip::tcp::acceptor taken(io, {asio::ip::make_address("127.0.0.1"), 0});
  const uint16_t busy = taken.local_endpoint().port();
  BrokerHarness h(log_dir);
  h.options().settings.kafka_listener = {"127.0.0.1", busy};
  h.Start();
  Status st = h.Wait();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_NE(
      st.message().find("cannot listen for Kafka clients on 127.0.0.1:" + std::to_string(busy)),
      std::string::npos)
      << st.message();
  EXPECT_TRUE(FileSystem::Default()->Exists(JoinPath(log_dir, kCleanShutdownFileName)));
}

// A fresh log dir gets meta.properties at start-up; its ids reach the handler
// and survive a restart; a conflicting node.id refuses to start untouched.
TEST(ServerBrokerTest, FreshLogDirGetsMetaPropertiesAndKeepsItsIdentity) {
  TempDir dir;
  const std::string log_dir = dir.Join("data");
  const std::string meta_path = JoinPath(log_dir, kMetaPropertiesFileName);
  std::string cluster_id;
  {
    BrokerHarness h(log_dir);
    h.options().config.other = {{"node.id", "4"}};
    h.Start();
    ASSERT_TRUE(Eventually([&] { return h.broker().state() == BrokerState::kServing; }));
    auto meta = MetaProperties::Read(meta_path);
    ASSERT_TRUE(meta.ok()) << meta.status().ToString();
    EXPECT_EQ(meta->version, 1);
    EXPECT_EQ(meta->node_id, 4);
    ASSERT_TRUE(meta->cluster_id.has_value());
    EXPECT_TRUE(meta->directory_id.has_value());
    cluster_id = *meta->cluster_id;
    EXPECT_EQ(h.handler_args().identity.node_id, 4);
    EXPECT_EQ(h.handler_args().identity.cluster_id, cluster_id);
    EXPECT_TRUE(h.StopAndWait().ok());
  }
  const std::string written = daruma::testing::ReadFileToString(meta_path);
  {
    BrokerHarness h(log_dir);  // no node.id: the stored one is adopted
    h.Start();
    ASSERT_TRUE(Eventually([&] { return h.broker().state() == BrokerState::kServing; }));
    EXPECT_EQ(h.handler_args().identity.node_id, 4);
    EXPECT_EQ(h.handler_args().identity.cluster_id, cluster_id);
    EXPECT_TRUE(h.StopAndWait().ok());
  }
  EXPECT_EQ(daruma::testing::ReadFileToString(meta_path), written);
  BrokerHarness h(log_dir);
  h.options().config.other = {{"node.id", "5"}};
  h.Start();
  Status st = h.Wait();
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("stored node id 4 does not match the configured node.id/broker.id 5"),
            std::string::npos)
      << st.message();
  EXPECT_EQ(h.broker().http_port(), 0);
  EXPECT_FALSE(FileSystem::Default()->Exists(JoinPath(log_dir, kCrashLoopFileName)));
}

}  // namespace
}  // namespace daruma::broker
