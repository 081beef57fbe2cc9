// HandlerHarness: a RequestHandler on a fresh LogManager in a TempDir, driven
// with frames built by the protocol codecs' Encode*Request, and an
// asio::io_context the test runs itself, as both the network and the request
// executor (so requests run on the test's thread, and parked fetches and their
// timers complete exactly when the test lets them).
#pragma once

#include <gtest/gtest.h>

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "broker/broker_context.h"
#include "broker/request_handler.h"
#include "protocol/messages.h"
#include "protocol/request_header.h"
#include "record/record_batch_builder.h"
#include "recovery/log_manager.h"
#include "support/test_support.h"

namespace daruma::broker::testing {

inline constexpr int32_t kNodeId = 1;

// What a Handle() call answered (done stays false while a fetch is parked).
// The frame is flattened (spliced file ranges read in); `splices` counts
// the ranges a Fetch sent zero-copy.
struct Reply {
  bool done = false;
  std::optional<Bytes> frame;
  bool close = false;
  size_t splices = 0;
};

class HandlerHarness {
 public:
  // `log_dirs` (1 or 2) log dirs, dir() the first.
  explicit HandlerHarness(std::function<void(BrokerContext&)> tweak = {}, int log_dirs = 1)
      : tweak_(std::move(tweak)), log_dirs_(log_dirs) {
    Start();
  }
  ~HandlerHarness() { Stop(); }

  const std::string& dir() const { return dir_.path(); }
  std::vector<std::string> dirs() const {
    std::vector<std::string> out{dir_.path()};
    if (log_dirs_ > 1) out.push_back(second_dir_.path());
    return out;
  }
  RequestHandler& handler() { return *handler_; }
  LogManager& manager() { return *manager_; }

  // A clean shutdown and a new broker on the same log dir (what survives a
  // restart). References from manager() and handler() are invalidated.
  void Restart() {
    Stop();
    Start();
  }
  // Restart() with the log manager on `fs` (a fault-injecting one), which
  // outlives the harness.
  void RestartOn(FileSystem* fs) {
    Stop();
    fs_ = fs;
    Start();
  }

  // Hands `frame` to the handler and runs whatever is ready now.
  std::shared_ptr<Reply> SubmitFrame(Bytes frame) {
    auto reply = std::make_shared<Reply>();
    handler_->Handle(std::move(frame), client_,
                     [reply](std::optional<ResponseFrame> response, bool close) {
                       EXPECT_FALSE(reply->done) << "respond called twice";
                       reply->done = true;
                       if (response) {
                         reply->splices = response->splices.size();
                         Result<Bytes> flat = response->Flatten();
                         EXPECT_TRUE(flat.ok()) << flat.status().ToString();
                         if (flat.ok()) reply->frame = std::move(*flat);
                       }
                       reply->close = close;
                     });
    Poll();
    return reply;
  }
  template <typename Request, typename Encode>
  std::shared_ptr<Reply> Submit(ApiKey key, int16_t version, const Request& request, Encode encode,
                                int32_t correlation_id = 42) {
    ProtocolWriter writer;
    EncodeRequestHeader({key, version, correlation_id, std::string("harness")}, writer);
    encode(request, version, writer);
    return SubmitFrame(writer.Release());
  }
  void Poll() {
    io_.restart();
    io_.poll();
  }
  // Runs the io_context until `reply` is done or `timeout` passes.
  bool Await(const Reply& reply, std::chrono::milliseconds timeout) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!reply.done && std::chrono::steady_clock::now() < deadline) {
      io_.restart();
      io_.run_one_for(std::chrono::milliseconds(5));
    }
    return reply.done;
  }

  // Decodes a response frame for (key, version); checks the correlation id.
  template <typename Decode>
  static auto DecodeReply(const Reply& reply, ApiKey key, int16_t version, Decode decode,
                          int32_t correlation_id = 42) {
    EXPECT_TRUE(reply.done);
    EXPECT_TRUE(reply.frame.has_value());
    ProtocolReader reader(reply.frame ? ByteSpan(*reply.frame) : ByteSpan());
    Result<int32_t> corr = DecodeResponseHeader(reader, key, version);
    EXPECT_TRUE(corr.ok()) << corr.status().ToString();
    if (corr.ok()) {
      EXPECT_EQ(*corr, correlation_id);
    }
    auto decoded = decode(reader, version);
    EXPECT_TRUE(decoded.ok()) << decoded.status().ToString();
    EXPECT_TRUE(reader.AtEnd()) << "trailing bytes at " << reader.position();
    return std::move(decoded).value();
  }

  // Sends and decodes in one go (the request must answer at once).
  template <typename Request, typename Encode, typename Decode>
  auto Call(ApiKey key, int16_t version, const Request& request, Encode encode, Decode decode) {
    auto reply = Submit(key, version, request, encode);
    EXPECT_TRUE(reply->done) << "no immediate response";
    EXPECT_FALSE(reply->close);
    return DecodeReply(*reply, key, version, decode);
  }

  CreateTopicsResponse CreateTopic(const std::string& name, int32_t partitions,
                                   std::vector<CreateTopicsRequest::Config> configs = {}) {
    CreateTopicsRequest request;
    request.topics.push_back({name, partitions, 1, {}, std::move(configs)});
    return Call(ApiKey::kCreateTopics, 4, request, EncodeCreateTopicsRequest,
                DecodeCreateTopicsResponse);
  }

  // A one-partition Produce request.
  static ProduceRequest OneBatch(const std::string& topic, int32_t partition, const Bytes& batch,
                                 int16_t acks = -1) {
    ProduceRequest request;
    request.acks = acks;
    request.timeout_ms = 1000;
    request.topic_data.push_back({topic, {{partition, ByteSpan(batch)}}});
    return request;
  }
  ProduceResponse::Partition Produce(const std::string& topic, int32_t partition,
                                     const Bytes& batch, int16_t version = 7) {
    ProduceResponse r = Call(ApiKey::kProduce, version, OneBatch(topic, partition, batch),
                             EncodeProduceRequest, DecodeProduceResponse);
    EXPECT_EQ(r.responses.size(), 1u);
    EXPECT_EQ(r.responses.at(0).partition_responses.size(), 1u);
    return r.responses.at(0).partition_responses.at(0);
  }

  // A one-partition Fetch request.
  static FetchRequest FetchOne(const std::string& topic, int32_t partition, int64_t offset,
                               int32_t max_wait_ms = 0, int32_t min_bytes = 1,
                               int8_t isolation = 0) {
    FetchRequest request;
    request.max_wait_ms = max_wait_ms;
    request.min_bytes = min_bytes;
    request.isolation_level = isolation;
    FetchRequest::Partition p;
    p.partition = partition;
    p.fetch_offset = offset;
    p.partition_max_bytes = 1048576;
    request.topics.push_back({.topic = topic, .partitions = {p}});
    return request;
  }
  FetchResponse::Partition Fetch(const std::string& topic, int32_t partition, int64_t offset,
                                 int16_t version = 11, int8_t isolation = 0) {
    FetchResponse r =
        Call(ApiKey::kFetch, version, FetchOne(topic, partition, offset, 0, 1, isolation),
             EncodeFetchRequest, DecodeFetchResponse);
    EXPECT_EQ(r.error_code, ErrorCode::kNone);
    EXPECT_EQ(r.responses.size(), 1u);
    EXPECT_EQ(r.responses.at(0).partitions.size(), 1u);
    return r.responses.at(0).partitions.at(0);
  }

 private:
  void Start() {
    LogManagerOptions options;
    if (fs_ != nullptr) options.fs = fs_;
    manager_ = std::make_unique<LogManager>(options);
    Status started = manager_->Startup(dirs(), LogConfig{}, 1);
    EXPECT_TRUE(started.ok()) << started.ToString();
    BrokerContext ctx;
    ctx.log_manager = manager_.get();
    ctx.config.log_dirs = dirs();
    ctx.node_id = kNodeId;
    ctx.host = "broker.test";
    ctx.port = 19092;
    if (tweak_) tweak_(ctx);
    handler_ = std::make_unique<RequestHandler>(ctx, io_.get_executor());
    EXPECT_TRUE(handler_->init_status().ok()) << handler_->init_status().ToString();
    // The coordinators load on a thread of their own; a test starts once
    // they serve, so its answers do not depend on that thread's pace.
    for (int i = 0; i < 1000 && handler_->init_status().ok(); ++i) {
      const auto groups = handler_->GroupCoordinatorStatus();
      const auto txns = handler_->TransactionCoordinatorStatus();
      if (groups && groups->loaded && txns && txns->loaded) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  void Stop() {
    handler_.reset();
    EXPECT_TRUE(manager_->Shutdown().ok());
    manager_.reset();
  }

  std::function<void(BrokerContext&)> tweak_;
  int log_dirs_;
  FileSystem* fs_ = nullptr;
  daruma::testing::TempDir dir_;
  daruma::testing::TempDir second_dir_;
  std::unique_ptr<LogManager> manager_;
  asio::io_context io_;
  std::unique_ptr<RequestHandler> handler_;
  ClientScopePtr client_ = std::make_shared<ClientScope>();  // one connection
};

// A client-style batch (base offset 0, leader epoch -1 as Java writes, or 0).
inline Bytes ClientBatch(const std::vector<std::string>& values, int64_t timestamp = 1000,
                         CompressionType compression = CompressionType::kNone) {
  BatchBuilderOptions options;
  options.compression = compression;
  std::vector<RecordInput> records;
  for (const std::string& v : values) {
    RecordInput r;
    r.timestamp = timestamp;
    r.key = "k-" + v;
    r.value = v;
    records.push_back(std::move(r));
  }
  Result<Bytes> batch = BuildRecordBatch(options, records);
  EXPECT_TRUE(batch.ok()) << batch.status().ToString();
  return batch.ok() ? *batch : Bytes{};
}

// A producer's batch (idempotent, or transactional), timestamped now: a
// producer whose last batch is older than producer.id.expiration.ms (a day)
// is dropped when the log loads.
inline Bytes ProducerBatch(int64_t producer_id, int16_t epoch, int32_t sequence,
                           const std::vector<std::string>& values, bool transactional = false) {
  const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  BatchBuilderOptions options;
  options.producer_id = producer_id;
  options.producer_epoch = epoch;
  options.base_sequence = sequence;
  options.is_transactional = transactional;
  std::vector<RecordInput> records;
  for (const std::string& v : values) {
    RecordInput r;
    r.timestamp = now;
    r.value = v;
    records.push_back(std::move(r));
  }
  Result<Bytes> batch = BuildRecordBatch(options, records);
  EXPECT_TRUE(batch.ok()) << batch.status().ToString();
  return batch.ok() ? *batch : Bytes{};
}

// `batch` as the broker stores it: assigned base offset, leader epoch 0.
inline Bytes AsStored(Bytes batch, int64_t base_offset) {
  SetBatchBaseOffset(batch, base_offset);
  SetBatchPartitionLeaderEpoch(batch, 0);
  return batch;
}

inline Bytes Concat(const Bytes& a, const Bytes& b) {
  Bytes out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

}  // namespace daruma::broker::testing
