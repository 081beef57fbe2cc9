// The Kafka listener's log lines (connection.h, event_log.h): connections at
// DEBUG, a refused size field at WARN naming socket.request.max.bytes. The log
// is read only after the server's thread has stopped.
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "broker/event_log.h"
#include "broker/kafka_server.h"
#include "server_test_util.h"

namespace daruma::broker {
namespace {

using testing::Eventually;
using testing::FrameClient;
using testing::StubHandler;

class LoggedServer {
 public:
  LoggedServer(LogLevel level, int32_t max_request_bytes)
      : log_({&out_, level}), handler_([](std::vector<uint8_t> frame, Respond respond) {
          respond(ResponseFrame(std::move(frame)), false);
        }) {
    KafkaServerOptions options;
    options.max_request_bytes = max_request_bytes;
    options.log = &log_;
    server_ = std::make_unique<KafkaServer>(io_, options, &metrics_, &counters_);
    Status st = server_->Bind({"127.0.0.1", 0});
    EXPECT_TRUE(st.ok()) << st.ToString();
    server_->Start(&handler_);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~LoggedServer() { Stop(); }
  // Stops the server and returns everything it logged.
  std::string Stop() {
    if (thread_.joinable()) {
      asio::post(io_, [this] { server_->Stop([this] { io_.stop(); }); });
      thread_.join();
    }
    return out_.str();
  }
  uint16_t port() const { return server_->port(); }
  NetworkCounters& counters() { return counters_; }

 private:
  std::ostringstream out_;
  EventLog log_;
  asio::io_context io_;
  RequestMetrics metrics_;
  NetworkCounters counters_;
  StubHandler handler_;
  std::unique_ptr<KafkaServer> server_;
  std::thread thread_;
};

bool LogHas(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ServerConnectionLogTest, DebugNamesEachConnectionOpenedAndClosed) {
  LoggedServer s(LogLevel::kDebug, 1000);
  {
    FrameClient c(s.port());
    c.SendFrame({0, 18, 0, 0, 0, 0, 0, 1});
    ASSERT_TRUE(c.ReadFrame().has_value());
  }
  ASSERT_TRUE(Eventually([&] { return s.counters().connections_active.load() == 0; }));
  const std::string log = s.Stop();
  EXPECT_TRUE(LogHas(log, "daruma serve: level=DEBUG event=connection_opened peer=127.0.0.1:"))
      << log;
  EXPECT_TRUE(LogHas(log, " reason=eof requests=1\n")) << log;
}

TEST(ServerConnectionLogTest, InfoLeavesConnectionsOut) {
  LoggedServer s(LogLevel::kInfo, 1000);
  {
    FrameClient c(s.port());
    c.SendFrame({0, 18, 0, 0, 0, 0, 0, 1});
    ASSERT_TRUE(c.ReadFrame().has_value());
  }
  ASSERT_TRUE(Eventually([&] { return s.counters().connections_active.load() == 0; }));
  EXPECT_EQ(s.Stop(), "");
}

TEST(ServerConnectionLogTest, ASizeAboveTheLimitIsAWarningBeforeTheClose) {
  LoggedServer s(LogLevel::kInfo, 1000);
  FrameClient c(s.port());
  c.SendSize(1001);
  EXPECT_TRUE(c.ClosedByPeer());
  const std::string log = s.Stop();
  EXPECT_TRUE(LogHas(log, "level=WARN event=request_size_refused peer=127.0.0.1:")) << log;
  EXPECT_TRUE(LogHas(log,
                     " size=1001 socket.request.max.bytes=1000 reason=\"request size is above "
                     "socket.request.max.bytes\" action=close\n"))
      << log;
}

}  // namespace
}  // namespace daruma::broker
