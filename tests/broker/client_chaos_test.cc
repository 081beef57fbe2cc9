// Clients that misbehave (issue 18): a real Broker in this process (the real
// request handler, log manager and sockets on 127.0.0.1), and clients that
// leave at every point of every request kind, leave while parked in a
// long-poll fetch or in the middle of a large sendfile, stop reading,
// half-close, arrive a thousand at once, pipeline and leave mid-way, or send
// garbage. After every case ExpectUnharmed checks that:
//   - the broker is alive and /health says serving;
//   - a well-behaved client still produces and fetches;
//   - no connection, parked request or descriptor is left over (sockets and
//     every other descriptor of the process, counted before and after), and
//     the heap in use (less the frame pool's recycled buffers) is back within
//     kHeapSlack of what it was before;
//   - every message a client was acknowledged is still readable.
// Memory: the suite also runs under ASan+UBSan (scripts/test-asan.sh), whose
// leak check covers whatever a departed client could leave behind at exit;
// the heap count (release builds; ASan has its own allocator) catches what is
// held while the broker runs, such as a parked fetch kept for its max wait.
//
// The broker ignores SIGPIPE itself (fatal_signals.h); this test installs no
// handler, so a broker that wrote to a closed socket without that would kill
// the test binary, as it killed `daruma serve`.
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/resource.h>

#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>

#include "broker/broker.h"
#include "broker/frame_pool.h"
#include "chaos_client.h"
#include "common/sanitizers.h"
#include "handler_harness.h"
#include "record/record_batch.h"
#include "server_test_util.h"
#include "support/test_support.h"

namespace daruma::broker {
namespace {

using testing::ChaosSocket;
using testing::Eventually;
using CloseHow = testing::ChaosSocket::CloseHow;
using std::chrono::milliseconds;

constexpr char kTopic[] = "chaos";
constexpr int kPartitions = 2;
// What the heap may grow by across a case: caches that fill once (segment
// and index handles, cursors, metrics series), not per connection.
constexpr int64_t kHeapSlack = 4 << 20;

constexpr bool kCountHeap = !kAddressSanitizer;

// Heap bytes in use by this process, less the frame pool's idle buffers.
int64_t HeapInUse() {
  const struct mallinfo2 info = ::mallinfo2();
  return int64_t(info.uordblks + info.hblkhd) - int64_t(FramePool::Default().pooled_bytes());
}

// A record batch of one record with `value`.
Bytes OneRecord(const std::string& value) {
  return testing::ClientBatch({value});
}

// Every (offset -> value) in the batches of `records` (a partial last batch,
// as a fetch may end with, is skipped).
std::map<int64_t, std::string> Values(const Bytes& records) {
  std::map<int64_t, std::string> out;
  size_t pos = 0;
  while (pos + 12 <= records.size()) {
    const size_t size = 12 + size_t(LoadBe32(records.data() + pos + 8));
    if (pos + size > records.size()) break;
    Result<RecordBatchView> batch = RecordBatchView::Parse(ByteSpan(records).subspan(pos, size));
    EXPECT_TRUE(batch.ok()) << batch.status().ToString();
    if (!batch.ok()) break;
    Result<std::vector<Record>> decoded = batch->DecodeRecords();
    EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
    if (decoded.ok()) {
      for (const Record& r : *decoded) out[r.offset] = r.value.value_or("");
    }
    pos += size;
  }
  return out;
}

class ClientChaos : public ::testing::Test {
 protected:
  void SetUp() override { StartBroker(/*flush_every_message=*/false); }
  void TearDown() override { StopBroker(); }

  void StartBroker(bool flush_every_message) {
    BrokerOptions o;
    o.config.log_dirs = {dir_.path() + "/data"};
    if (flush_every_message) o.config.log.flush_messages = 1;
    o.settings.kafka_listener = {"127.0.0.1", 0};
    o.settings.http_listener = {"127.0.0.1", 0};
    o.settings.num_io_threads = 4;
    o.handle_signals = false;
    o.drain_timeout = milliseconds(5000);
    broker_ = std::make_unique<Broker>(std::move(o));
    run_ = std::async(std::launch::async, [this] { return broker_->Run(); });
    ASSERT_TRUE(Eventually([&] { return broker_->state() == BrokerState::kServing; }, 20000));
    port_ = broker_->kafka_port();
    CreateTopicsRequest create;
    create.topics.push_back({kTopic, kPartitions, 1, {}, {}});
    ChaosSocket client(port_);
    ASSERT_TRUE(client.Send(
        testing::RequestFrame(ApiKey::kCreateTopics, 4, create, EncodeCreateTopicsRequest)));
    ASSERT_TRUE(client.ReceiveFrame().has_value());
    client.Close(CloseHow::kFin);
    // Warm up what a fetch keeps open (segment and index handles), so the
    // descriptor baseline is that of a broker that has served.
    for (int p = 0; p < kPartitions; ++p) {
      Produce(p, "warm-up-" + std::to_string(p));
      ReadAll(p);
    }
    ASSERT_TRUE(Eventually([&] { return Metric("daruma_connections_active") == 0; }));
    // The only sockets left are the two listeners (Kafka, HTTP) once the HTTP
    // server has finished its lingering close of the last /metrics exchange.
    ASSERT_TRUE(Eventually([&] { return testing::CountDescriptors().sockets == 2; }));
    baseline_ = testing::CountDescriptors();
    heap_baseline_ = HeapInUse();
  }

  void StopBroker() {
    if (broker_ == nullptr) return;
    broker_->RequestStop();
    ASSERT_EQ(run_.wait_for(std::chrono::seconds(20)), std::future_status::ready);
    Status st = run_.get();
    EXPECT_TRUE(st.ok()) << st.ToString();
    broker_.reset();
  }

  // Produces `value` (acks=-1) and remembers it as acknowledged; returns its
  // offset, -1 when it was not acknowledged.
  int64_t Produce(int partition, const std::string& value) {
    ChaosSocket client(port_);
    if (!client.Send(testing::ProduceFrame(kTopic, partition, OneRecord(value)))) {
      ADD_FAILURE() << "cannot send a Produce";
      return -1;
    }
    std::optional<Bytes> frame = client.ReceiveFrame();
    if (!frame) {
      ADD_FAILURE() << "no Produce response";
      return -1;
    }
    const int64_t offset = ProduceOffset(*frame);
    if (offset >= 0) acked_[partition][offset] = Digest(value);
    return offset;
  }

  static int64_t ProduceOffset(const Bytes& frame) {
    ProtocolReader reader{ByteSpan(frame)};
    if (!DecodeResponseHeader(reader, ApiKey::kProduce, 7).ok()) return -1;
    Result<ProduceResponse> r = DecodeProduceResponse(reader, 7);
    if (!r.ok() || r->responses.size() != 1 || r->responses[0].partition_responses.size() != 1) {
      return -1;
    }
    const auto& p = r->responses[0].partition_responses[0];
    EXPECT_EQ(p.error_code, ErrorCode::kNone) << "Produce error";
    return p.error_code == ErrorCode::kNone ? p.base_offset : -1;
  }

  // What is remembered of an acknowledged value (not the value: the test's
  // own memory is counted with the broker's).
  static size_t Digest(const std::string& value) { return std::hash<std::string>{}(value); }

  // Every record of `partition` (offset -> Digest), fetched from offset 0 by
  // a polite client.
  std::map<int64_t, size_t> ReadAll(int partition) {
    std::map<int64_t, size_t> all;
    ChaosSocket client(port_);
    int64_t next = 0;
    for (int round = 0; round < 1000; ++round) {
      EXPECT_TRUE(client.Send(testing::FetchFrame(kTopic, partition, next, 0, 8 << 20)));
      std::optional<Bytes> frame = client.ReceiveFrame();
      EXPECT_TRUE(frame.has_value()) << "no Fetch response";
      if (!frame) break;
      ProtocolReader reader{ByteSpan(*frame)};
      EXPECT_TRUE(DecodeResponseHeader(reader, ApiKey::kFetch, 11).ok());
      Result<FetchResponse> r = DecodeFetchResponse(reader, 11);
      EXPECT_TRUE(r.ok()) << r.status().ToString();
      if (!r.ok()) break;
      const FetchResponse::Partition& p = r->responses.at(0).partitions.at(0);
      EXPECT_EQ(p.error_code, ErrorCode::kNone);
      const std::map<int64_t, std::string> got = Values(p.records.value_or(Bytes{}));
      if (got.empty()) break;
      for (const auto& [offset, value] : got) all[offset] = Digest(value);
      next = got.rbegin()->first + 1;
      if (next >= p.high_watermark) break;
    }
    return all;
  }

  // A value of /metrics (the first sample of `name`), -1 when absent.
  int64_t Metric(const std::string& name) {
    const std::string text = testing::HttpGet(broker_->http_port(), "/metrics").body;
    const size_t at = text.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::stoll(text.substr(at + name.size() + 2));
  }

  // The checks after every case (see the file comment).
  void ExpectUnharmed(const std::string& after) {
    SCOPED_TRACE("after: " + after);
    ASSERT_EQ(broker_->state(), BrokerState::kServing);
    const testing::HttpResult health = testing::HttpGet(broker_->http_port(), "/health");
    EXPECT_EQ(health.status, 200);
    EXPECT_NE(health.body.find("\"serving\""), std::string::npos) << health.body;
    for (int p = 0; p < kPartitions; ++p) {
      EXPECT_GE(Produce(p, "witness-" + std::to_string(++witnesses_)), 0) << "partition " << p;
    }
    EXPECT_TRUE(Eventually([&] { return Metric("daruma_connections_active") == 0; }))
        << "connections left open: " << Metric("daruma_connections_active");
    EXPECT_TRUE(Eventually([&] { return Metric("daruma_requests_parked") == 0; }))
        << "requests left parked: " << Metric("daruma_requests_parked");
    testing::DescriptorCount now;
    EXPECT_TRUE(Eventually([&] {
      now = testing::CountDescriptors();
      return now == baseline_;
    })) << "descriptors: "
        << now.all << " (" << now.sockets << " sockets), before " << baseline_.all << " ("
        << baseline_.sockets << " sockets)";
    if (kCountHeap) {
      int64_t heap = 0;
      EXPECT_TRUE(Eventually([&] {
        heap = HeapInUse();
        return heap <= heap_baseline_ + kHeapSlack;
      })) << "heap in use "
          << heap << " bytes, before " << heap_baseline_;
    }
    for (int p = 0; p < kPartitions; ++p) {
      const std::map<int64_t, size_t> all = ReadAll(p);
      for (const auto& [offset, value] : acked_[p]) {
        auto it = all.find(offset);
        ASSERT_NE(it, all.end()) << "acknowledged offset " << offset << " of partition " << p
                                 << " is gone";
        EXPECT_EQ(it->second, value)
            << "offset " << offset << " of partition " << p << " reads back another value";
      }
    }
  }

  daruma::testing::TempDir dir_;
  std::unique_ptr<Broker> broker_;
  std::future<Status> run_;
  uint16_t port_ = 0;
  testing::DescriptorCount baseline_;
  int64_t heap_baseline_ = 0;
  std::map<int, std::map<int64_t, size_t>> acked_;  // partition -> offset -> Digest
  int witnesses_ = 0;
};

// Mid-size prefix, mid-header, mid-body and right after the last byte (the
// request is handled, nobody reads the answer), with FIN and with RST, for
// every request kind. Long frames are cut at ~100 evenly spread points.
TEST_F(ClientChaos, DisconnectAtEveryByteOfEveryRequestKind) {
  for (const testing::NamedFrame& kind : testing::EveryRequestKind(kTopic, OneRecord("cut"))) {
    const size_t step = std::max<size_t>(1, kind.frame.size() / 100);
    for (size_t cut = 0; cut <= kind.frame.size(); cut += (cut < 8 ? 1 : step)) {
      ChaosSocket client(port_);
      ASSERT_TRUE(client.connected());
      ASSERT_TRUE(client.Send(ByteSpan(kind.frame).first(cut))) << kind.name << " cut " << cut;
      client.Close(cut % 2 == 0 ? CloseHow::kFin : CloseHow::kReset);
    }
    ExpectUnharmed(kind.name + " cut at every point");
  }
}

// The README's sequence that killed the broker with SIGPIPE: a consumer
// parks a long-poll fetch, leaves, and a produce wakes the fetch whose answer
// goes out (sendfile) to the closed socket. The parked fetch must not wait
// out its 30 s: it is completed as soon as the client is seen gone.
TEST_F(ClientChaos, ConsumerLeavesWhileParkedThenAProduceWakesTheFetch) {
  for (CloseHow how : {CloseHow::kFin, CloseHow::kReset}) {
    for (bool produce_at_once : {true, false}) {
      const int64_t log_end = Produce(0, "before-park") + 1;
      ChaosSocket consumer(port_);
      ASSERT_TRUE(consumer.Send(testing::FetchFrame(kTopic, 0, log_end, 30000)));
      ASSERT_TRUE(Eventually([&] { return Metric("daruma_requests_parked") == 1; }));
      consumer.Close(how);
      if (!produce_at_once) {
        EXPECT_TRUE(Eventually([&] { return Metric("daruma_requests_parked") == 0; }, 5000))
            << "the departed consumer's fetch is still parked";
      }
      EXPECT_GE(Produce(0, "wakes-the-parked-fetch"), 0);
      ExpectUnharmed(std::string(how == CloseHow::kFin ? "FIN" : "RST") +
                     (produce_at_once ? ", produce at once" : ", produce after the release"));
    }
  }
  EXPECT_GE(Metric("daruma_connection_peer_gone_in_flight_total"), 2);
}

// A large answer (16 MiB) to a client with a 4 KiB receive window that reads
// a little and leaves: sendfile meets EPIPE/ECONNRESET mid-response.
TEST_F(ClientChaos, DisconnectInTheMiddleOfALargeSendfile) {
  const std::string big(200 * 1024, 'x');
  for (int i = 0; i < 80; ++i) ASSERT_GE(Produce(1, big + std::to_string(i)), 0);
  for (CloseHow how : {CloseHow::kFin, CloseHow::kReset}) {
    ChaosSocket reader(port_, 10, /*receive_buffer=*/4096);
    ASSERT_TRUE(reader.Send(testing::FetchFrame(kTopic, 1, 0, 0, 64 << 20)));
    ASSERT_TRUE(reader.Receive(1000).has_value());
    reader.Close(how);
    ExpectUnharmed(how == CloseHow::kFin ? "FIN mid-sendfile" : "RST mid-sendfile");
  }
  EXPECT_GE(Metric("daruma_connection_write_errors_total"), 1);
}

// A client that asks for 16 MiB and never reads, and one that pipelines
// requests without reading an answer: both only hold their own connection.
TEST_F(ClientChaos, ReadersThatStopReadingDoNotStallOthers) {
  const std::string big(200 * 1024, 'y');
  for (int i = 0; i < 80; ++i) ASSERT_GE(Produce(1, big + std::to_string(i)), 0);
  ChaosSocket stalled(port_, 10, /*receive_buffer=*/4096);
  ASSERT_TRUE(stalled.Send(testing::FetchFrame(kTopic, 1, 0, 0, 64 << 20)));
  ChaosSocket never_reads(port_, /*timeout_seconds=*/1);
  const Bytes metadata = testing::EveryRequestKind(kTopic, OneRecord("m"))[1].frame;
  for (int i = 0; i < 2000; ++i) {
    if (!never_reads.Send(metadata)) break;  // its send buffer is full: it stalls, not us
  }
  for (int i = 0; i < 20; ++i) {
    EXPECT_GE(Produce(0, "while-stalled-" + std::to_string(i)), 0);
    EXPECT_FALSE(ReadAll(0).empty());
  }
  stalled.Close(CloseHow::kFin);
  never_reads.Close(CloseHow::kFin);
  ExpectUnharmed("a stalled reader and a client that never reads");
}

// A client that sends its request and shuts down only its sending side still
// gets the answer, and a parked fetch of such a client is answered at once.
TEST_F(ClientChaos, HalfClosedClientsGetTheirAnswer) {
  {
    ChaosSocket client(port_);
    ASSERT_TRUE(client.Send(testing::EveryRequestKind(kTopic, OneRecord("m"))[1].frame));
    client.ShutdownSend();
    EXPECT_TRUE(client.ReceiveFrame().has_value()) << "no Metadata answer after a half-close";
    EXPECT_TRUE(client.ClosedByPeer());
  }
  {
    const int64_t log_end = Produce(0, "before-half-close") + 1;
    ChaosSocket client(port_, /*timeout_seconds=*/20);
    ASSERT_TRUE(client.Send(testing::FetchFrame(kTopic, 0, log_end, 30000)));
    ASSERT_TRUE(Eventually([&] { return Metric("daruma_requests_parked") == 1; }));
    const auto start = std::chrono::steady_clock::now();
    client.ShutdownSend();
    EXPECT_TRUE(client.ReceiveFrame().has_value()) << "no Fetch answer after a half-close";
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10))
        << "the half-closed client's fetch waited out its max wait";
    EXPECT_TRUE(client.ClosedByPeer());
  }
  ExpectUnharmed("half-closed clients");
}

// 1,000 connections at once (some mid-frame), then all dropped at once.
TEST_F(ClientChaos, AThousandConnectionsOpenedAndDroppedAtOnce) {
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);
  // Both ends live in this process: two descriptors per connection.
  const int count = int(std::min<rlim_t>(1000, (limit.rlim_cur - 200) / 2));
  if (count < 1000) {
    GTEST_SKIP() << "RLIMIT_NOFILE " << limit.rlim_cur << " allows only " << count
                 << " connections in one process; raise it (ulimit -n 4096) to run this case";
  }
  const Bytes produce = testing::ProduceFrame(kTopic, 0, OneRecord("crowd"));
  std::vector<ChaosSocket> crowd;
  crowd.reserve(size_t(count));
  for (int i = 0; i < count; ++i) {
    crowd.emplace_back(port_);
    ASSERT_TRUE(crowd.back().connected()) << "connection " << i;
    if (i % 3 == 1) crowd.back().Send(ByteSpan(produce).first(size_t(i) % produce.size()));
  }
  ASSERT_TRUE(Eventually([&] { return Metric("daruma_connections_active") == count; }))
      << Metric("daruma_connections_active") << " of " << count << " accepted";
  for (size_t i = 0; i < crowd.size(); ++i) {
    crowd[i].Close(i % 2 == 0 ? CloseHow::kFin : CloseHow::kReset);
  }
  ExpectUnharmed("1,000 connections dropped at once");
}

// Ten pipelined produces and half of an eleventh, three answers read, then the
// client leaves: the three acknowledged records stay, the broker stays up.
TEST_F(ClientChaos, PipelinedRequestsWithACloseInTheMiddle) {
  for (CloseHow how : {CloseHow::kFin, CloseHow::kReset}) {
    ChaosSocket client(port_);
    std::vector<std::string> values;
    Bytes pipeline;
    for (int i = 0; i < 11; ++i) {
      values.push_back("pipelined-" + std::to_string(i));
      Bytes frame = testing::ProduceFrame(kTopic, 0, OneRecord(values.back()), -1, i);
      if (i == 10) frame.resize(frame.size() / 2);
      pipeline.insert(pipeline.end(), frame.begin(), frame.end());
    }
    ASSERT_TRUE(client.Send(pipeline));
    for (int i = 0; i < 3; ++i) {
      std::optional<Bytes> frame = client.ReceiveFrame();
      ASSERT_TRUE(frame.has_value()) << "answer " << i;
      const int64_t offset = ProduceOffset(*frame);
      ASSERT_GE(offset, 0);
      acked_[0][offset] = Digest(values[size_t(i)]);
    }
    client.Close(how);
    ExpectUnharmed("pipelined requests, close after three answers");
  }
}

// With log.flush.interval.messages=1 an acks=-1 produce is answered after its
// fsync; clients that leave during it cost nothing, and what was
// acknowledged before stays.
TEST_F(ClientChaos, ClientsLeaveWhileTheirProduceIsBeingFsynced) {
  StopBroker();
  StartBroker(/*flush_every_message=*/true);
  const std::string payload(256 * 1024, 'f');
  for (int i = 0; i < 20; ++i) {
    ChaosSocket client(port_);
    ASSERT_TRUE(client.Send(
        testing::ProduceFrame(kTopic, i % kPartitions, OneRecord(payload + std::to_string(i)))));
    client.Close(i % 2 == 0 ? CloseHow::kReset : CloseHow::kFin);
    if (i % 5 == 0) {
      EXPECT_GE(Produce(i % kPartitions, "acked-between-" + std::to_string(i)), 0);
    }
  }
  ExpectUnharmed("clients gone during fsynced produces");
}

// Garbage: a negative or huge size, an unknown API key, random bytes in a
// frame of a plausible size, an empty frame. Each closes only its connection.
TEST_F(ClientChaos, GarbageClosesOnlyThatConnection) {
  std::mt19937 random(18);
  std::vector<Bytes> garbage = {
      {0x80, 0, 0, 0},                             // size < 0
      {0x7f, 0xff, 0xff, 0xff},                    // size > socket.request.max.bytes
      {0, 0, 0, 0},                                // an empty frame
      {0, 0, 0, 8, 0x7f, 0x00, 0, 1, 0, 0, 0, 1},  // api key 32512
  };
  for (int i = 0; i < 200; ++i) {
    Bytes frame(4 + 1 + random() % 200);
    for (size_t b = 4; b < frame.size(); ++b) frame[b] = uint8_t(random());
    StoreBe32(frame.data(), uint32_t(frame.size() - 4));
    garbage.push_back(std::move(frame));
  }
  for (const Bytes& bytes : garbage) {
    ChaosSocket client(port_, /*timeout_seconds=*/5);
    ASSERT_TRUE(client.Send(bytes));
    // Either an error answer or a close; never a hang.
    client.ShutdownSend();
    EXPECT_TRUE(client.ClosedByPeer());
  }
  ExpectUnharmed("garbage frames");
}

}  // namespace
}  // namespace daruma::broker
