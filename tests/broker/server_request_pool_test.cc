// Requests off the network thread (issue #7): a real Broker with the real
// RequestHandler on its num.io.threads pool, driven over TCP.
//   - concurrent produces and long-poll fetches from several connections on
//     several partitions: contiguous offsets, per-connection order, and every
//     partition reads back byte-identical;
//   - a produce stuck on a slow disk (SlowDiskFileSystem) holds one request
//     thread only: ApiVersions, Produce and Fetch on other connections and
//     /health answer meanwhile, and the stuck connection keeps its order;
//   - a stop with a produce stuck on disk and a parked fetch: the fetch is
//     answered at once, the produce when the disk comes back, and only then
//     do the logs shut down (clean-shutdown marker, data on disk).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "broker/broker.h"
#include "common/bytes.h"
#include "handler_harness.h"
#include "log/clean_shutdown_file.h"
#include "protocol/messages.h"
#include "server_test_util.h"
#include "slow_disk_file_system.h"

namespace daruma::broker {
namespace {

using daruma::testing::TempDir;
using std::chrono::milliseconds;
using testing::AsStored;
using testing::ClientBatch;
using testing::Eventually;
using testing::FrameClient;
using testing::HandlerHarness;
using testing::HttpGet;
using testing::SlowDiskFileSystem;

// A Broker with the production request handler on ephemeral ports.
class PoolBroker {
 public:
  PoolBroker(const std::string& log_dir, FileSystem* fs, int io_threads) {
    BrokerOptions o;
    o.config.log_dirs = {log_dir};
    o.settings.kafka_listener = {"127.0.0.1", 0};
    o.settings.http_listener = {"127.0.0.1", 0};
    o.settings.num_io_threads = io_threads;
    o.log_manager.fs = fs;
    o.handle_signals = false;
    o.drain_timeout = milliseconds(20000);
    broker_ = std::make_unique<Broker>(std::move(o));
    result_ = std::async(std::launch::async, [this] { return broker_->Run(); });
  }
  ~PoolBroker() {
    if (result_.valid()) (void)StopAndWait();
  }
  bool AwaitServing() {
    return Eventually([this] { return broker_->state() == BrokerState::kServing; });
  }
  Broker& broker() { return *broker_; }
  bool finished() { return result_.wait_for(milliseconds(0)) == std::future_status::ready; }
  Status StopAndWait() {
    broker_->RequestStop();
    return Wait();
  }
  Status Wait() {
    if (result_.wait_for(std::chrono::seconds(30)) != std::future_status::ready) {
      return Status::IoError("broker did not stop within 30 s");
    }
    return result_.get();
  }

 private:
  std::unique_ptr<Broker> broker_;
  std::future<Status> result_;
};

// A blocking Kafka client on one connection: requests may be pipelined
// (Send, Send, Receive, Receive); each Receive checks the correlation id.
class KafkaClient {
 public:
  explicit KafkaClient(uint16_t port) : conn_(port) {}

  template <typename Request, typename Encode>
  int32_t Send(ApiKey key, int16_t version, const Request& request, Encode encode) {
    ProtocolWriter writer;
    EncodeRequestHeader({key, version, ++next_correlation_, std::string("pool-test")}, writer);
    encode(request, version, writer);
    conn_.SendFrame(writer.Release());
    return next_correlation_;
  }
  template <typename Decode>
  auto Receive(ApiKey key, int16_t version, int32_t correlation_id, Decode decode) {
    std::optional<std::vector<uint8_t>> frame = conn_.ReadFrame();
    EXPECT_TRUE(frame.has_value()) << "no response to correlation id " << correlation_id;
    Reply reply;
    reply.done = true;
    reply.frame = std::move(frame);
    return HandlerHarness::DecodeReply(reply, key, version, decode, correlation_id);
  }
  template <typename Request, typename Encode, typename Decode>
  auto Call(ApiKey key, int16_t version, const Request& request, Encode encode, Decode decode) {
    const int32_t id = Send(key, version, request, encode);
    return Receive(key, version, id, decode);
  }

  ProduceResponse::Partition Produce(const std::string& topic, int32_t partition,
                                     const Bytes& batch) {
    ProduceResponse r = Call(ApiKey::kProduce, 7, HandlerHarness::OneBatch(topic, partition, batch),
                             EncodeProduceRequest, DecodeProduceResponse);
    EXPECT_EQ(r.responses.size(), 1u);
    return r.responses.empty() ? ProduceResponse::Partition{}
                               : r.responses[0].partition_responses.at(0);
  }
  FetchResponse::Partition Fetch(const std::string& topic, int32_t partition, int64_t offset,
                                 int32_t max_wait_ms) {
    FetchResponse r =
        Call(ApiKey::kFetch, 11, HandlerHarness::FetchOne(topic, partition, offset, max_wait_ms),
             EncodeFetchRequest, DecodeFetchResponse);
    EXPECT_EQ(r.error_code, ErrorCode::kNone);
    EXPECT_EQ(r.responses.size(), 1u);
    return r.responses.empty() ? FetchResponse::Partition{} : r.responses[0].partitions.at(0);
  }
  void CreateTopic(const std::string& name, int32_t partitions) {
    CreateTopicsRequest request;
    request.topics.push_back({name, partitions, 1, {}, {}});
    CreateTopicsResponse r = Call(ApiKey::kCreateTopics, 4, request, EncodeCreateTopicsRequest,
                                  DecodeCreateTopicsResponse);
    ASSERT_EQ(r.topics.size(), 1u);
    EXPECT_EQ(r.topics[0].error_code, ErrorCode::kNone);
  }
  FrameClient& connection() { return conn_; }

 private:
  using Reply = testing::Reply;
  FrameClient conn_;
  int32_t next_correlation_ = 0;
};

// The offset after the last whole batch in `records`.
int64_t NextOffset(const Bytes& records, int64_t from) {
  int64_t next = from;
  for (size_t pos = 0; pos + batch_layout::kRecords <= records.size();) {
    const uint8_t* p = records.data() + pos;
    next = int64_t(LoadBe64(p + batch_layout::kBaseOffset)) +
           int32_t(LoadBe32(p + batch_layout::kLastOffsetDelta)) + 1;
    pos += kLogOverhead + LoadBe32(p + batch_layout::kLength);
  }
  return next;
}

struct Produced {
  int producer = 0;
  int sequence = 0;  // request number on its connection
  int64_t base_offset = -1;
  Bytes batch;
};

TEST(ServerRequestPoolTest, ConcurrentProducesAndFetchesOnSeveralPartitions) {
  constexpr int kProducers = 4;
  constexpr int kRequests = 30;  // per producer, spread over the partitions
  constexpr int kPartitions = 3;
  constexpr int64_t kEnd = int64_t(kProducers) * kRequests / kPartitions * 2;  // 2 records each
  TempDir dir;
  PoolBroker h(dir.Join("data"), FileSystem::Default(), 4);
  ASSERT_TRUE(h.AwaitServing());
  const uint16_t port = h.broker().kafka_port();
  KafkaClient(port).CreateTopic("orders", kPartitions);

  // Long-poll consumers, one per partition, started before any data exists.
  std::vector<Bytes> consumed(kPartitions);
  std::vector<std::thread> consumers;
  for (int p = 0; p < kPartitions; ++p) {
    consumers.emplace_back([&, p] {
      KafkaClient client(port);
      int64_t offset = 0;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (offset < kEnd && std::chrono::steady_clock::now() < deadline) {
        FetchResponse::Partition r = client.Fetch("orders", p, offset, 2000);
        ASSERT_EQ(r.error_code, ErrorCode::kNone);
        ASSERT_TRUE(r.records.has_value());
        consumed[p].insert(consumed[p].end(), r.records->begin(), r.records->end());
        offset = NextOffset(*r.records, offset);
      }
      EXPECT_EQ(offset, kEnd) << "partition " << p;
    });
  }
  std::mutex mu;
  std::map<int, std::vector<Produced>> by_partition;
  std::vector<std::thread> producers;
  for (int id = 0; id < kProducers; ++id) {
    producers.emplace_back([&, id] {
      KafkaClient client(port);
      for (int i = 0; i < kRequests; ++i) {
        const int partition = (id + i) % kPartitions;
        const std::string tag = "p" + std::to_string(id) + "-" + std::to_string(i);
        Produced done{id, i, -1, ClientBatch({tag + "-a", tag + "-b"})};
        ProduceResponse::Partition r = client.Produce("orders", partition, done.batch);
        EXPECT_EQ(r.error_code, ErrorCode::kNone) << tag;
        done.base_offset = r.base_offset;
        std::lock_guard<std::mutex> lock(mu);
        by_partition[partition].push_back(std::move(done));
      }
    });
  }
  for (std::thread& t : producers) t.join();
  for (std::thread& t : consumers) t.join();

  KafkaClient reader(port);
  for (int p = 0; p < kPartitions; ++p) {
    std::vector<Produced>& batches = by_partition[p];
    ASSERT_EQ(int64_t(batches.size()) * 2, kEnd);
    std::sort(batches.begin(), batches.end(),
              [](const Produced& a, const Produced& b) { return a.base_offset < b.base_offset; });
    Bytes expected;
    std::map<int, int> last_sequence;  // per producer: its requests keep their order
    for (size_t i = 0; i < batches.size(); ++i) {
      EXPECT_EQ(batches[i].base_offset, int64_t(i) * 2) << "partition " << p;
      auto [it, first] = last_sequence.emplace(batches[i].producer, batches[i].sequence);
      if (!first) {
        EXPECT_GT(batches[i].sequence, it->second);
        it->second = batches[i].sequence;
      }
      const Bytes stored = AsStored(batches[i].batch, batches[i].base_offset);
      expected.insert(expected.end(), stored.begin(), stored.end());
    }
    EXPECT_EQ(consumed[p], expected) << "long-poll consumer of partition " << p;
    FetchResponse::Partition all = reader.Fetch("orders", p, 0, 0);
    EXPECT_EQ(all.high_watermark, kEnd);
    ASSERT_TRUE(all.records.has_value());
    EXPECT_EQ(*all.records, expected) << "partition " << p;
  }
  EXPECT_TRUE(h.StopAndWait().ok());
}

TEST(ServerRequestPoolTest, SlowDiskHoldsOneRequestThreadNotTheNetwork) {
  TempDir dir;
  SlowDiskFileSystem fs("/slow-0/");
  PoolBroker h(dir.Join("data"), &fs, 2);
  ASSERT_TRUE(h.AwaitServing());
  const uint16_t port = h.broker().kafka_port();
  {
    KafkaClient admin(port);
    admin.CreateTopic("slow", 1);
    admin.CreateTopic("fast", 1);
  }
  fs.CloseGate();
  KafkaClient stuck(port);
  const Bytes slow_batch = ClientBatch({"slow"});
  const int32_t produce_id = stuck.Send(
      ApiKey::kProduce, 7, HandlerHarness::OneBatch("slow", 0, slow_batch), EncodeProduceRequest);
  // Pipelined behind the stuck produce on the same connection.
  const int32_t versions_id =
      stuck.Send(ApiKey::kApiVersions, 2, ApiVersionsRequest{}, EncodeApiVersionsRequest);
  ASSERT_TRUE(Eventually([&] { return fs.blocked() == 1; }));

  const auto start = std::chrono::steady_clock::now();
  KafkaClient other(port);
  ApiVersionsResponse versions = other.Call(ApiKey::kApiVersions, 2, ApiVersionsRequest{},
                                            EncodeApiVersionsRequest, DecodeApiVersionsResponse);
  EXPECT_EQ(versions.error_code, ErrorCode::kNone);
  EXPECT_FALSE(versions.api_keys.empty());
  testing::HttpResult health = HttpGet(h.broker().http_port(), "/health");
  EXPECT_EQ(health.status, 200);
  EXPECT_EQ(nlohmann::json::parse(health.body)["state"], "serving");
  const Bytes fast_batch = ClientBatch({"fast"});
  ProduceResponse::Partition fast = other.Produce("fast", 0, fast_batch);
  EXPECT_EQ(fast.error_code, ErrorCode::kNone);
  EXPECT_EQ(fast.base_offset, 0);
  FetchResponse::Partition read = other.Fetch("fast", 0, 0, 0);
  ASSERT_TRUE(read.records.has_value());
  EXPECT_EQ(*read.records, AsStored(fast_batch, 0));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_EQ(fs.blocked(), 1);  // still stuck all along

  fs.OpenGate();
  ProduceResponse produced = stuck.Receive(ApiKey::kProduce, 7, produce_id, DecodeProduceResponse);
  ASSERT_EQ(produced.responses.size(), 1u);
  EXPECT_EQ(produced.responses[0].partition_responses.at(0).error_code, ErrorCode::kNone);
  EXPECT_EQ(produced.responses[0].partition_responses.at(0).base_offset, 0);
  ApiVersionsResponse after =
      stuck.Receive(ApiKey::kApiVersions, 2, versions_id, DecodeApiVersionsResponse);
  EXPECT_EQ(after.error_code, ErrorCode::kNone);
  EXPECT_EQ(*other.Fetch("slow", 0, 0, 0).records, AsStored(slow_batch, 0));
  EXPECT_TRUE(h.StopAndWait().ok());
}

TEST(ServerRequestPoolTest, StopDrainsInFlightRequestsBeforeTheLogsShutDown) {
  TempDir dir;
  const std::string log_dir = dir.Join("data");
  SlowDiskFileSystem fs("/slow-0/");
  PoolBroker h(log_dir, &fs, 2);
  ASSERT_TRUE(h.AwaitServing());
  const uint16_t port = h.broker().kafka_port();
  {
    KafkaClient admin(port);
    admin.CreateTopic("slow", 1);
    admin.CreateTopic("idle", 1);
  }
  fs.CloseGate();
  KafkaClient producer(port);
  const Bytes batch = ClientBatch({"survives", "the stop"});
  const int32_t produce_id = producer.Send(
      ApiKey::kProduce, 7, HandlerHarness::OneBatch("slow", 0, batch), EncodeProduceRequest);
  ASSERT_TRUE(Eventually([&] { return fs.blocked() == 1; }));
  KafkaClient consumer(port);
  const int32_t fetch_id = consumer.Send(
      ApiKey::kFetch, 11, HandlerHarness::FetchOne("idle", 0, 0, 30000), EncodeFetchRequest);
  std::this_thread::sleep_for(milliseconds(200));  // the fetch parks

  const auto stop = std::chrono::steady_clock::now();
  h.broker().RequestStop();
  FetchResponse parked = consumer.Receive(ApiKey::kFetch, 11, fetch_id, DecodeFetchResponse);
  EXPECT_LT(std::chrono::steady_clock::now() - stop, std::chrono::seconds(5));
  ASSERT_EQ(parked.responses.size(), 1u);
  EXPECT_EQ(parked.responses[0].partitions.at(0).error_code, ErrorCode::kNone);
  EXPECT_EQ(parked.responses[0].partitions.at(0).records, Bytes{});
  EXPECT_TRUE(consumer.connection().ClosedByPeer());

  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_FALSE(h.finished()) << "the logs shut down under an in-flight produce";
  EXPECT_EQ(h.broker().state(), BrokerState::kStopping);
  EXPECT_FALSE(FileSystem::Default()->Exists(JoinPath(log_dir, kCleanShutdownFileName)));
  fs.OpenGate();
  ProduceResponse produced =
      producer.Receive(ApiKey::kProduce, 7, produce_id, DecodeProduceResponse);
  ASSERT_EQ(produced.responses.size(), 1u);
  EXPECT_EQ(produced.responses[0].partition_responses.at(0).error_code, ErrorCode::kNone);
  EXPECT_EQ(produced.responses[0].partition_responses.at(0).base_offset, 0);
  EXPECT_TRUE(producer.connection().ClosedByPeer());
  Status st = h.Wait();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_TRUE(FileSystem::Default()->Exists(JoinPath(log_dir, kCleanShutdownFileName)));

  LogManager reopened;
  ASSERT_TRUE(reopened.Startup({log_dir}, LogConfig{}, 1).ok());
  Log* log = reopened.GetLog({"slow", 0});
  ASSERT_NE(log, nullptr);
  EXPECT_EQ(log->log_end_offset(), 2);
  Result<FetchDataInfo> data = log->Read(0, 1 << 20, FetchIsolation::kLogEnd, true);
  ASSERT_TRUE(data.ok()) << data.status().ToString();
  EXPECT_EQ(data->records, AsStored(batch, 0));
  EXPECT_TRUE(reopened.Shutdown().ok());
}

}  // namespace
}  // namespace daruma::broker
