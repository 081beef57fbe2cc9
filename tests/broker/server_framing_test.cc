// The Kafka listener's framing and ordering contract (connection.h,
// kafka_server.h), one case per rule, against a stub handler.
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "broker/kafka_server.h"
#include "common/file_system.h"
#include "server_test_util.h"
#include "support/test_support.h"

namespace daruma::broker {
namespace {

using testing::Eventually;
using testing::FrameClient;
using testing::StubHandler;

// A KafkaServer on 127.0.0.1:<ephemeral> with its io_context on a thread.
class ServerFixture {
 public:
  ServerFixture(StubHandler::OnFrame on_frame, int32_t max_request_bytes = 104857600,
                std::chrono::milliseconds max_idle = std::chrono::milliseconds(600000))
      : handler_(std::move(on_frame)), work_(asio::make_work_guard(io_)) {
    KafkaServerOptions options;
    options.max_request_bytes = max_request_bytes;
    options.max_idle = max_idle;
    options.drain_timeout = std::chrono::milliseconds(5000);
    server_ = std::make_unique<KafkaServer>(io_, options, &metrics_, &counters_);
    Status st = server_->Bind({"127.0.0.1", 0});
    EXPECT_TRUE(st.ok()) << st.ToString();
    server_->Start(&handler_);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~ServerFixture() {
    asio::post(io_, [this] { server_->Stop([] {}); });
    work_.reset();
    io_.stop();
    thread_.join();
  }
  uint16_t port() const { return server_->port(); }
  asio::io_context& io() { return io_; }
  KafkaServer& server() { return *server_; }
  StubHandler& handler() { return handler_; }
  NetworkCounters& counters() { return counters_; }
  RequestMetrics& metrics() { return metrics_; }

 private:
  asio::io_context io_;
  RequestMetrics metrics_;
  NetworkCounters counters_;
  StubHandler handler_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::unique_ptr<KafkaServer> server_;
  std::thread thread_;
};

// KafkaServer is used on its io thread only: ask there.
size_t OpenConnections(ServerFixture& f) {
  std::promise<size_t> count;
  asio::post(f.io(), [&] { count.set_value(f.server().open_connections()); });
  return count.get_future().get();
}

void Echo(std::vector<uint8_t> frame, Respond respond) {
  respond(std::move(frame), false);
}

TEST(ServerFramingTest, EchoesOneFrameWithSizePrefix) {
  ServerFixture f(Echo);
  FrameClient c(f.port());
  c.SendFrame({0, 18, 0, 3, 0, 0, 0, 7});
  auto r = c.ReadFrame();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (std::vector<uint8_t>{0, 18, 0, 3, 0, 0, 0, 7}));
  EXPECT_EQ(f.handler().calls.load(), 1);
}

// A file of `size` bytes, byte i = i * 7 + 3 (mod 256).
std::shared_ptr<const File> PatternFile(const daruma::testing::TempDir& dir, size_t size) {
  std::string data(size, '\0');
  for (size_t i = 0; i < size; ++i) data[i] = char(uint8_t(i * 7 + 3));
  daruma::testing::WriteStringToFile(dir.Join("pattern"), data);
  Result<std::unique_ptr<File>> file =
      FileSystem::Default()->Open(dir.Join("pattern"), OpenMode::kRead);
  EXPECT_TRUE(file.ok());
  return file.ok() ? std::shared_ptr<const File>(std::move(*file)) : nullptr;
}

// File ranges spliced into a response go out with sendfile, in place: bytes,
// range, bytes, range, bytes; 6 MiB, more than the socket buffers hold, so
// the send waits for the client to read.
TEST(ServerFramingTest, SplicedFileRangesAreSentInPlace) {
  daruma::testing::TempDir dir;
  std::shared_ptr<const File> file = PatternFile(dir, 8 << 20);
  ASSERT_TRUE(file != nullptr);
  ASSERT_GE(file->fd(), 0);
  ServerFixture f([&](std::vector<uint8_t>, Respond respond) {
    ResponseFrame frame(Bytes{'h', 'e', 'a', 'd', 'm', 'i', 'd', 't', 'a', 'i', 'l'});
    frame.splices.push_back({4, {file, 5, 6 << 20}});
    frame.splices.push_back({7, {file, 1, 3}});
    respond(std::move(frame), false);
  });
  FrameClient c(f.port());
  c.SendFrame({0, 1, 0, 11, 0, 0, 0, 1});
  auto r = c.ReadFrame();
  ASSERT_TRUE(r.has_value());
  ASSERT_EQ(r->size(), 11u + (6u << 20) + 3u);
  Bytes want = {'h', 'e', 'a', 'd'};
  for (size_t i = 5; i < 5 + (6u << 20); ++i) want.push_back(uint8_t(i * 7 + 3));
  want.insert(want.end(), {'m', 'i', 'd'});
  for (size_t i = 1; i < 4; ++i) want.push_back(uint8_t(i * 7 + 3));
  want.insert(want.end(), {'t', 'a', 'i', 'l'});
  EXPECT_TRUE(*r == want);
  // The connection goes on: the next request is answered too.
  c.SendFrame({0, 1, 0, 11, 0, 0, 0, 2});
  EXPECT_TRUE(c.ReadFrame().has_value());
}

// A range reaching past the end of its file cannot be sent whole: the
// connection is closed rather than sending a short frame.
TEST(ServerFramingTest, RangeBeyondTheFileClosesTheConnection) {
  daruma::testing::TempDir dir;
  std::shared_ptr<const File> file = PatternFile(dir, 100);
  ServerFixture f([&](std::vector<uint8_t>, Respond respond) {
    ResponseFrame frame(Bytes{'x'});
    frame.splices.push_back({1, {file, 50, 100}});
    respond(std::move(frame), false);
  });
  FrameClient c(f.port());
  c.SendFrame({0, 1, 0, 11, 0, 0, 0, 1});
  EXPECT_FALSE(c.ReadFrame().has_value());
  EXPECT_TRUE(Eventually([&] { return OpenConnections(f) == 0; }));
}

TEST(ServerFramingTest, OversizedFrameClosesWithoutReadingTheBody) {
  ServerFixture f(Echo, /*max_request_bytes=*/1024);
  FrameClient c(f.port());
  c.SendSize(1025);
  EXPECT_TRUE(c.ClosedByPeer());
  EXPECT_EQ(f.handler().calls.load(), 0);
  EXPECT_TRUE(Eventually([&] { return f.counters().frames_too_large.load() == 1; }));
}

TEST(ServerFramingTest, FrameOfExactlyTheLimitIsHandled) {
  ServerFixture f(Echo, /*max_request_bytes=*/1024);
  FrameClient c(f.port());
  c.SendFrame(std::vector<uint8_t>(1024, 0x5a));
  auto r = c.ReadFrame();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->size(), 1024u);
}

TEST(ServerFramingTest, HugeSizeUnderDefaultLimitIsRefusedAtOnce) {
  // 2 GiB - 1 against the 100 MiB default: closed immediately, nothing
  // allocated (an allocation of that size would take visible time and memory).
  ServerFixture f(Echo);
  FrameClient c(f.port());
  const auto start = std::chrono::steady_clock::now();
  c.SendSize(0x7fffffff);
  EXPECT_TRUE(c.ClosedByPeer());
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  EXPECT_EQ(f.handler().calls.load(), 0);
  EXPECT_TRUE(Eventually([&] { return f.counters().frames_too_large.load() == 1; }));
}

TEST(ServerFramingTest, NegativeSizeCloses) {
  ServerFixture f(Echo);
  FrameClient c(f.port());
  c.SendSize(-1);
  EXPECT_TRUE(c.ClosedByPeer());
  EXPECT_EQ(f.handler().calls.load(), 0);
  EXPECT_TRUE(Eventually([&] { return f.counters().frames_negative.load() == 1; }));
}

TEST(ServerFramingTest, TruncatedFrameIsDroppedAndServerKeepsServing) {
  ServerFixture f(Echo);
  {
    FrameClient c(f.port());
    c.SendSize(100);
    c.SendRaw(std::vector<uint8_t>(50, 1));
    c.ShutdownSend();
    EXPECT_TRUE(c.ClosedByPeer());
  }
  EXPECT_TRUE(Eventually([&] { return f.counters().frames_truncated.load() == 1; }));
  EXPECT_EQ(f.handler().calls.load(), 0);
  FrameClient next(f.port());
  next.SendFrame({1, 2, 3});
  auto r = next.ReadFrame();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (std::vector<uint8_t>{1, 2, 3}));
}

TEST(ServerFramingTest, TruncatedSizeCountsAsTruncated) {
  ServerFixture f(Echo);
  FrameClient c(f.port());
  c.SendRaw({0, 0});
  c.ShutdownSend();
  EXPECT_TRUE(c.ClosedByPeer());
  EXPECT_TRUE(Eventually([&] { return f.counters().frames_truncated.load() == 1; }));
}

// Pipelined frames: the first is answered last by the handler's clock, yet
// responses come back in request order and the handler never sees two at once.
TEST(ServerFramingTest, PipelinedRequestsAreHandledOneAtATimeInOrder) {
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
  std::vector<uint8_t> seen;
  std::unique_ptr<ServerFixture> f;
  f = std::make_unique<ServerFixture>([&](std::vector<uint8_t> frame, Respond respond) {
    const int now = ++in_flight;
    max_in_flight = std::max(max_in_flight.load(), now);
    seen.push_back(frame[0]);
    // Earlier frames wait longer: 50 ms for frame 0 down to 10 ms for frame 4.
    auto timer = std::make_shared<asio::steady_timer>(
        f->io(), std::chrono::milliseconds(50 - 10 * frame[0]));
    timer->async_wait([&, timer, frame = std::move(frame), respond](const asio::error_code&) {
      --in_flight;
      respond(frame, false);
    });
  });
  FrameClient c(f->port());
  std::vector<uint8_t> all;
  for (uint8_t i = 0; i < 5; ++i) {
    const std::vector<uint8_t> frame = {0, 0, 0, 4, i, 0xaa, 0xbb, 0xcc};
    all.insert(all.end(), frame.begin(), frame.end());
  }
  c.SendRaw(all);  // one write: all five frames arrive together
  for (uint8_t i = 0; i < 5; ++i) {
    auto r = c.ReadFrame();
    ASSERT_TRUE(r.has_value()) << "response " << int(i);
    EXPECT_EQ(*r, (std::vector<uint8_t>{i, 0xaa, 0xbb, 0xcc}));
  }
  EXPECT_EQ(max_in_flight.load(), 1);
  EXPECT_EQ(seen, (std::vector<uint8_t>{0, 1, 2, 3, 4}));
}

TEST(ServerFramingTest, NoResponseMovesOnToTheNextFrame) {
  // acks=0: the handler sends nothing, the next request is still answered.
  ServerFixture f([](std::vector<uint8_t> frame, Respond respond) {
    if (frame[0] == 0) {
      respond(std::nullopt, false);
    } else {
      respond(std::move(frame), false);
    }
  });
  FrameClient c(f.port());
  c.SendFrame({0, 0, 1});
  c.SendFrame({1, 0, 2});
  auto r = c.ReadFrame();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (std::vector<uint8_t>{1, 0, 2}));
}

TEST(ServerFramingTest, HandlerCloseSendsTheResponseThenCloses) {
  ServerFixture f([](std::vector<uint8_t>, Respond respond) {
    respond(std::vector<uint8_t>{9, 9}, /*close=*/true);
  });
  FrameClient c(f.port());
  // Both frames in one write: a second write could meet the closed socket.
  c.SendRaw({0, 0, 0, 4, 0, 77, 0, 0, 0, 0, 0, 4, 0, 77, 0, 1});  // the second is never handled
  auto r = c.ReadFrame();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (std::vector<uint8_t>{9, 9}));
  EXPECT_TRUE(c.ClosedByPeer());
  EXPECT_EQ(f.handler().calls.load(), 1);
  EXPECT_TRUE(Eventually([&] { return f.counters().closed_by_handler.load() == 1; }));
}

TEST(ServerFramingTest, HandlerCloseWithoutResponseCloses) {
  ServerFixture f([](std::vector<uint8_t>, Respond respond) { respond(std::nullopt, true); });
  FrameClient c(f.port());
  c.SendFrame({0, 99, 0, 0});
  EXPECT_TRUE(c.ClosedByPeer());
}

TEST(ServerFramingTest, LatencyIsRecordedPerApiKey) {
  ServerFixture f(Echo);
  FrameClient c(f.port());
  c.SendFrame({0, 18, 0, 3});  // ApiVersions
  ASSERT_TRUE(c.ReadFrame().has_value());
  c.SendFrame({0, 3, 0, 4});  // Metadata
  ASSERT_TRUE(c.ReadFrame().has_value());
  c.SendFrame({0, 3, 0, 4});
  ASSERT_TRUE(c.ReadFrame().has_value());
  const auto stats = f.metrics().Snapshot();
  ASSERT_EQ(stats.size(), 2u);
  EXPECT_EQ(stats.at(18).count, 1);
  EXPECT_EQ(stats.at(3).count, 2);
  EXPECT_EQ(f.counters().connections_accepted.load(), 1);
}

// Stop: the in-flight request is answered, then the connection closes; an
// idle connection closes at once; no new connection is accepted.
TEST(ServerFramingTest, StopFinishesInFlightRequestsThenCloses) {
  std::unique_ptr<ServerFixture> f;
  f = std::make_unique<ServerFixture>([&](std::vector<uint8_t> frame, Respond respond) {
    auto timer = std::make_shared<asio::steady_timer>(f->io(), std::chrono::milliseconds(300));
    timer->async_wait([timer, frame = std::move(frame), respond](const asio::error_code&) {
      respond(frame, false);
    });
  });
  FrameClient busy(f->port());
  FrameClient idle(f->port());
  busy.SendFrame({0, 1, 2, 3});
  ASSERT_TRUE(Eventually([&] { return f->handler().calls.load() == 1; }));
  std::atomic<bool> stopped{false};
  asio::post(f->io(), [&] { f->server().Stop([&] { stopped = true; }); });
  EXPECT_TRUE(idle.ClosedByPeer());
  auto r = busy.ReadFrame();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (std::vector<uint8_t>{0, 1, 2, 3}));
  EXPECT_TRUE(busy.ClosedByPeer());
  EXPECT_TRUE(Eventually([&] { return stopped.load(); }));
  EXPECT_EQ(f->handler().shutdowns.load(), 1);
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  asio::error_code ec;
  s.connect({asio::ip::make_address("127.0.0.1"), f->port()}, ec);
  EXPECT_TRUE(ec) << "the acceptor should be closed";
}

// connections.max.idle.ms: an idle connection is closed once the timeout
// passes, and only then.
TEST(ServerFramingTest, IdleConnectionClosesAfterMaxIdle) {
  ServerFixture f(Echo, 104857600, std::chrono::milliseconds(300));
  const auto start = std::chrono::steady_clock::now();
  FrameClient c(f.port());
  EXPECT_TRUE(c.ClosedByPeer());
  const auto waited = std::chrono::steady_clock::now() - start;
  EXPECT_GE(waited, std::chrono::milliseconds(250));
  EXPECT_LT(waited, std::chrono::seconds(5));
  EXPECT_TRUE(Eventually([&] { return f.counters().closed_idle.load() == 1; }));
  EXPECT_TRUE(Eventually([&] { return OpenConnections(f) == 0; }));
}

TEST(ServerFramingTest, EachRequestRestartsTheIdleTimeout) {
  ServerFixture f(Echo, 104857600, std::chrono::milliseconds(400));
  FrameClient c(f.port());
  // 8 requests 150 ms apart span 1.2 s, three timeouts, yet none is idle that long.
  for (uint8_t i = 0; i < 8; ++i) {
    c.SendFrame({0, 18, 0, i});
    auto r = c.ReadFrame();
    ASSERT_TRUE(r.has_value()) << "closed before request " << int(i);
    EXPECT_EQ(*r, (std::vector<uint8_t>{0, 18, 0, i}));
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
  }
  EXPECT_EQ(f.counters().closed_idle.load(), 0);
  EXPECT_TRUE(c.ClosedByPeer());
  EXPECT_EQ(f.counters().closed_idle.load(), 1);
}

TEST(ServerFramingTest, RequestInFlightLongerThanMaxIdleIsAnswered) {
  std::unique_ptr<ServerFixture> f;
  f = std::make_unique<ServerFixture>(
      [&](std::vector<uint8_t> frame, Respond respond) {
        auto timer = std::make_shared<asio::steady_timer>(f->io(), std::chrono::milliseconds(700));
        timer->async_wait([timer, frame = std::move(frame), respond](const asio::error_code&) {
          respond(frame, false);
        });
      },
      104857600, std::chrono::milliseconds(200));
  FrameClient c(f->port());
  c.SendFrame({0, 1, 0, 9});
  auto r = c.ReadFrame();
  ASSERT_TRUE(r.has_value()) << "closed while the request was in flight";
  EXPECT_EQ(*r, (std::vector<uint8_t>{0, 1, 0, 9}));
  EXPECT_EQ(f->counters().closed_idle.load(), 0);
}

// A response nobody reads: the write stalls once the socket buffers are
// full, and after max idle without progress the connection is closed
// (Kafka's Selector: no activity), instead of holding the response for good
// (helper-56: six Fetch clients that never read held 10,586 descriptors).
void BigResponse(std::vector<uint8_t>, Respond respond) {
  respond(std::vector<uint8_t>(size_t(16) << 20, 7), false);
}

TEST(ServerFramingTest, AClientThatNeverReadsItsResponseIsClosedAfterMaxIdle) {
  ServerFixture f(BigResponse, 104857600, std::chrono::milliseconds(300));
  FrameClient c(f.port());
  c.SendFrame({0, 1, 0, 1});
  EXPECT_TRUE(Eventually([&] { return f.counters().closed_idle.load() == 1; }));
  EXPECT_TRUE(Eventually([&] { return OpenConnections(f) == 0; }));
}

// One that reads slowly but steadily takes longer than max idle over the
// whole response, and gets all of it.
TEST(ServerFramingTest, AClientReadingItsResponseSlowlyIsNotIdle) {
  ServerFixture f(BigResponse, 104857600, std::chrono::milliseconds(300));
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.1"), f.port()});
  const std::vector<uint8_t> frame = {0, 0, 0, 4, 0, 1, 0, 1};
  asio::write(s, asio::buffer(frame));
  const size_t total = 4 + (size_t(16) << 20);
  std::vector<uint8_t> chunk(1 << 20);
  size_t got = 0;
  const auto start = std::chrono::steady_clock::now();
  while (got < total) {
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    asio::error_code ec;
    got += s.read_some(asio::buffer(chunk.data(), std::min(chunk.size(), total - got)), ec);
    ASSERT_FALSE(ec) << ec.message() << " after " << got << " bytes";
  }
  // A close while writing would have cut the response short (the loop's
  // assertion). closed_idle is not asked: once the last bytes sit in the
  // socket buffers the response is written, and the wait for the next
  // request may time out while this client is still draining them.
  EXPECT_GT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(300));
}

TEST(ServerFramingTest, NegativeMaxIdleNeverClosesIdleConnections) {
  ServerFixture f(Echo, 104857600, std::chrono::milliseconds(-1));
  FrameClient c(f.port());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  c.SendFrame({0, 18, 0, 1});
  auto r = c.ReadFrame();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(*r, (std::vector<uint8_t>{0, 18, 0, 1}));
  EXPECT_EQ(f.counters().closed_idle.load(), 0);
}

}  // namespace
}  // namespace daruma::broker
