// Request memory on the Kafka listener (connection.h, request_memory_pool.h):
// a declared size costs memory only as its bytes arrive, queued.max.request.bytes
// mutes connections without deadlocking, and socket.request.max.bytes closes.
#include <gtest/gtest.h>

#include <cstdio>
#include <future>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "broker/frame_pool.h"
#include "broker/kafka_server.h"
#include "server_test_util.h"

namespace daruma::broker {
namespace {

using testing::Eventually;
using testing::FrameClient;
using testing::StubHandler;

class MemoryFixture {
 public:
  MemoryFixture(KafkaServerOptions options, StubHandler::OnFrame on_frame)
      : handler_(std::move(on_frame)), work_(asio::make_work_guard(io_)) {
    options.drain_timeout = std::chrono::milliseconds(5000);
    server_ = std::make_unique<KafkaServer>(io_, options, &metrics_, &counters_);
    Status st = server_->Bind({"127.0.0.1", 0});
    EXPECT_TRUE(st.ok()) << st.ToString();
    server_->Start(&handler_);
    thread_ = std::thread([this] { io_.run(); });
  }
  ~MemoryFixture() {
    asio::post(io_, [this] { server_->Stop([] {}); });
    work_.reset();
    io_.stop();
    thread_.join();
  }
  uint16_t port() const { return server_->port(); }
  StubHandler& handler() { return handler_; }
  NetworkCounters& counters() { return counters_; }

 private:
  asio::io_context io_;
  RequestMetrics metrics_;
  NetworkCounters counters_;
  StubHandler handler_;
  asio::executor_work_guard<asio::io_context::executor_type> work_;
  std::unique_ptr<KafkaServer> server_;
  std::thread thread_;
};

// Every frame is answered with its size (4 bytes) and the sum of its bytes
// (8 bytes), so a test can check a large frame arrived whole without echoing it.
std::vector<uint8_t> Answer(const std::vector<uint8_t>& frame) {
  uint64_t sum = 0;
  for (uint8_t b : frame) sum += b;
  const uint32_t size = uint32_t(frame.size());
  std::vector<uint8_t> out = {uint8_t(size >> 24), uint8_t(size >> 16), uint8_t(size >> 8),
                              uint8_t(size)};
  for (int shift = 56; shift >= 0; shift -= 8) out.push_back(uint8_t(sum >> shift));
  return out;
}

void AnswerSizeAndSum(std::vector<uint8_t> frame, Respond respond) {
  respond(ResponseFrame(Answer(frame)), false);
}

std::vector<uint8_t> Pattern(size_t size, uint8_t seed) {
  std::vector<uint8_t> v(size);
  for (size_t i = 0; i < size; ++i) v[i] = uint8_t(i * 31 + seed);
  return v;
}

int64_t ResidentBytes() {
  long long size = 0, resident = 0;
  if (std::FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%lld %lld", &size, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return int64_t(resident) * ::sysconf(_SC_PAGESIZE);
}

// Buffers pooled by earlier tests would be handed to the first frames read
// (their memory is resident already) and blur what new frames cost.
void EmptyTheFramePool() {
  while (FramePool::Default().pooled_bytes() > 0) FramePool::Default().Take(FramePool::kMinBytes);
}

// The case: sockets that each declare ~100 MB and send nothing made
// the broker allocate (and zero) every declared byte at once.
TEST(ServerRequestMemoryTest, SizesWithoutBodiesCostAlmostNoMemory) {
  EmptyTheFramePool();
  MemoryFixture f({}, AnswerSizeAndSum);
  constexpr int kClients = 5;
  constexpr int32_t kDeclared = 100'000'000;
  const int64_t rss_before = ResidentBytes();
  std::vector<std::unique_ptr<FrameClient>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<FrameClient>(f.port()));
    clients.back()->SendSize(kDeclared);
  }
  ASSERT_TRUE(Eventually(
      [&] { return f.counters().request_queued_bytes.load() == int64_t(kClients) * kDeclared; }));
  EXPECT_LE(f.counters().request_memory_bytes.load(),
            int64_t(kClients * Connection::kFirstWindowBytes));
  EXPECT_LT(ResidentBytes() - rss_before, int64_t(64) << 20)
      << "the declared 500 MB must not become resident";
  EXPECT_EQ(f.handler().calls.load(), 0);
  clients.clear();
  EXPECT_TRUE(Eventually([&] {
    return f.counters().request_memory_bytes.load() == 0 &&
           f.counters().request_queued_bytes.load() == 0;
  }));
}

// The window doubles as bytes arrive; the frame must come out whole and in
// order however the bytes were cut.
TEST(ServerRequestMemoryTest, AFrameSentInSmallPiecesArrivesWhole) {
  MemoryFixture f({}, AnswerSizeAndSum);
  FrameClient c(f.port());
  const std::vector<uint8_t> body = Pattern(300'000, 7);
  c.SendSize(int32_t(body.size()));
  for (size_t at = 0; at < body.size(); at += 1000) {
    c.SendRaw(std::vector<uint8_t>(body.begin() + at, body.begin() + at + 1000));
  }
  EXPECT_EQ(c.ReadFrame(), Answer(body));
  EXPECT_TRUE(Eventually([&] { return f.counters().request_memory_bytes.load() == 0; }));
}

// With queued.max.request.bytes smaller than every request, each request is
// still read and answered, one at a time, and nothing waits forever.
TEST(ServerRequestMemoryTest, RequestsLargerThanTheQueuedBytesAllComplete) {
  KafkaServerOptions options;
  options.queued_max_request_bytes = 1 << 20;
  MemoryFixture f(options, AnswerSizeAndSum);
  constexpr int kClients = 4;
  std::vector<std::future<bool>> answered;
  for (int i = 0; i < kClients; ++i) {
    answered.push_back(std::async(std::launch::async, [&f, i] {
      FrameClient c(f.port());
      bool all = true;
      for (int round = 0; round < 2; ++round) {
        const std::vector<uint8_t> body = Pattern(3 << 20, uint8_t(i * 2 + round));
        c.SendFrame(body);
        all = all && c.ReadFrame() == Answer(body);
      }
      return all;
    }));
  }
  for (auto& a : answered) EXPECT_TRUE(a.get());
  EXPECT_EQ(f.handler().calls.load(), 2 * kClients);
  EXPECT_TRUE(Eventually([&] {
    return f.counters().request_queued_bytes.load() == 0 &&
           f.counters().connections_muted.load() == 0;
  }));
}

// A connection holding the pool mutes the next one, whose frame is read only
// once the first is answered.
TEST(ServerRequestMemoryTest, AnExhaustedPoolMutesUntilARequestIsAnswered) {
  KafkaServerOptions options;
  options.queued_max_request_bytes = 1 << 20;
  MemoryFixture f(options, AnswerSizeAndSum);
  FrameClient big(f.port());
  const std::vector<uint8_t> body = Pattern(2 << 20, 1);
  big.SendSize(int32_t(body.size()));
  big.SendRaw(std::vector<uint8_t>(body.begin(), body.begin() + 1000));
  ASSERT_TRUE(
      Eventually([&] { return f.counters().request_queued_bytes.load() == int64_t(body.size()); }));
  FrameClient small(f.port());
  const std::vector<uint8_t> tiny = {0, 18, 0, 0, 0, 0, 0, 1};
  small.SendFrame(tiny);
  ASSERT_TRUE(Eventually([&] { return f.counters().connections_muted.load() == 1; }));
  EXPECT_EQ(f.handler().calls.load(), 0);
  big.SendRaw(std::vector<uint8_t>(body.begin() + 1000, body.end()));
  EXPECT_EQ(big.ReadFrame(), Answer(body));
  EXPECT_EQ(small.ReadFrame(), Answer(tiny));
  EXPECT_EQ(f.counters().connections_muted.load(), 0);
}

// A request parked after its handler is done with the frame (a long-poll
// Fetch) gives the pool back at once: a producer muted behind it would
// otherwise wait out the fetch's whole max wait.
TEST(ServerRequestMemoryTest, AParkedRequestDoneWithItsFrameFreesThePool) {
  KafkaServerOptions options;
  options.queued_max_request_bytes = 1 << 20;
  std::mutex mu;
  std::vector<std::pair<Respond, std::vector<uint8_t>>> parked;
  StubHandler* handler = nullptr;
  MemoryFixture f(options, [&](std::vector<uint8_t> frame, Respond respond) {
    if (frame.size() < 100) return respond(ResponseFrame(Answer(frame)), false);
    // As RequestHandler: the copy taken at Handle(), called once the frame
    // is no longer read.
    std::function<void()> frame_done = handler->last_client->frame_done;
    std::lock_guard lock(mu);
    parked.emplace_back(std::move(respond), Answer(frame));
    frame_done();
  });
  handler = &f.handler();
  FrameClient fetch(f.port());
  const std::vector<uint8_t> big = Pattern(2 << 20, 5);
  fetch.SendFrame(big);
  ASSERT_TRUE(Eventually([&] {
    std::lock_guard lock(mu);
    return parked.size() == 1 && f.counters().request_queued_bytes.load() == 0;
  }));
  FrameClient produce(f.port());
  const std::vector<uint8_t> tiny = {0, 0, 0, 7, 0, 0, 0, 3};
  produce.SendFrame(tiny);
  EXPECT_EQ(produce.ReadFrame(), Answer(tiny)) << "not muted behind the parked request";
  EXPECT_EQ(f.counters().connections_muted.load(), 0);
  {
    std::lock_guard lock(mu);
    parked[0].first(ResponseFrame(parked[0].second), false);
  }
  EXPECT_EQ(fetch.ReadFrame(), Answer(big));
  // The answered responder still holds its connection: drop it while the
  // server that owns the connection's timers is alive (`parked` outlives
  // `f`, ASan caught the timer destroyed after its io_context).
  std::lock_guard lock(mu);
  parked.clear();
}

// A muted client that leaves, and the client holding the pool that leaves
// mid-frame, give everything back; the next client is served.
TEST(ServerRequestMemoryTest, ClientsLeavingWhileMutedOrMidFrameGiveTheMemoryBack) {
  KafkaServerOptions options;
  options.queued_max_request_bytes = 1 << 20;
  MemoryFixture f(options, AnswerSizeAndSum);
  {
    FrameClient holder(f.port());
    holder.SendSize(4 << 20);
    holder.SendRaw(Pattern(5000, 3));
    ASSERT_TRUE(Eventually([&] { return f.counters().request_queued_bytes.load() == 4 << 20; }));
    FrameClient muted(f.port());
    muted.SendSize(100);
    ASSERT_TRUE(Eventually([&] { return f.counters().connections_muted.load() == 1; }));
  }
  EXPECT_TRUE(Eventually([&] {
    return f.counters().request_queued_bytes.load() == 0 &&
           f.counters().request_memory_bytes.load() == 0 &&
           f.counters().connections_muted.load() == 0;
  }));
  FrameClient next(f.port());
  const std::vector<uint8_t> tiny = {0, 18, 0, 0, 0, 0, 0, 2};
  next.SendFrame(tiny);
  EXPECT_EQ(next.ReadFrame(), Answer(tiny));
  EXPECT_EQ(f.handler().calls.load(), 1);
}

// socket.request.max.bytes: a size field above it closes the connection
// before any body byte is read or reserved.
TEST(ServerRequestMemoryTest, ASizeAboveSocketRequestMaxBytesCloses) {
  KafkaServerOptions options;
  options.max_request_bytes = 1000;
  options.queued_max_request_bytes = 1 << 20;
  MemoryFixture f(options, AnswerSizeAndSum);
  FrameClient c(f.port());
  c.SendSize(1001);
  EXPECT_TRUE(c.ClosedByPeer());
  EXPECT_EQ(f.counters().frames_too_large.load(), 1);
  EXPECT_EQ(f.counters().request_queued_bytes.load(), 0);
  EXPECT_EQ(f.handler().calls.load(), 0);
}

}  // namespace
}  // namespace daruma::broker
