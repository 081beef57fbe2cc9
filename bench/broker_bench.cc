// Broker throughput end to end: a real `daruma serve` child process (the
// binary of this build) on a data dir under $TMPDIR, driven by librdkafka's C
// API in this process over loopback TCP. Measured in the same run:
//
//   BM_LoopbackTcp        the network ceiling: one sender thread write()s
//                         1 MiB chunks into a loopback TCP socket, the
//                         benchmark thread read()s them; counter: the
//                         sender's CPU seconds per GB
//   BM_FileWriteBaseline  the page-cache ceiling of a produce: write() of
//                         1 MiB chunks into a new file (no fsync)
//   BM_Produce/<acks>     1 KiB messages to one partition, linger.ms=5,
//                         batch.size=1 MiB, acks=1 and acks=-1, as fast as
//                         the client goes; counters: messages/s, the broker's
//                         CPU seconds per GB (from /proc), the client's
//                         (this process, librdkafka's threads included), p50/p99 ms from
//                         produce() to the delivery report (mostly queueing
//                         in the client's 64 MiB queue)
//   BM_ProduceLatency/<acks>  p50/p99 at a light 10 MB/s, acks=1 and acks=-1
//   BM_ProduceIdempotent/-1   BM_Produce/-1 with enable.idempotence=true
//                         (producer ids, sequences, duplicate checks)
//   BM_ProducePlainVsIdempotent/<max.in.flight>/<partitions>  issue 20's
//                         ratio: 1 KiB messages with acks=-1, plain and
//                         idempotent runs interleaved (P I, I P, ...;
//                         $DARUMA_BENCH_PAIRED_REPS each, default 5),
//                         max.in.flight 5 and 1 for both to one partition,
//                         and 5 to a topic of 8 partitions;
//                         medians, ranges, the ratio, CPU s/GB, Produce
//                         request size and round trip
//   BM_Consume            the partition of the last produce, from offset 0,
//                         with the legacy batch consumer (no group); broker
//                         and client CPU seconds per GB (the broker sends
//                         the log with sendfile: fetch_slice_reader.h)
//   BM_ProduceBaseline, BM_ConsumeBaseline
//                         the same, against a second broker binary named by
//                         $DARUMA_BENCH_BROKER_BASELINE (bench/run builds the
//                         commit before the protocol layer was generated from
//                         schemas, issue 19), registered only when it is set;
//                         the two brokers run one after the other in one run
//
// Issue targets (one broker core): produce >= 1 GB/s, consume >= 2 GB/s.
// The data size is $DARUMA_BENCH_BROKER_MIB (default 1024). The broker runs
// with Kafka's defaults (page cache, no fsync per message).
#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "broker_process.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMessageBytes = 1024;

int64_t DataBytes() {
  const char* mib = std::getenv("DARUMA_BENCH_BROKER_MIB");
  return int64_t(mib && *mib ? std::atoi(mib) : 1024) << 20;
}

// Which broker binary a benchmark drives: this build's, or the baseline's.
enum Binary { kThisBuild = 0, kBaseline = 1 };

std::string BinaryPath(Binary which) {
  if (which == kBaseline) {
    const char* baseline = std::getenv("DARUMA_BENCH_BROKER_BASELINE");
    return baseline ? baseline : "";
  }
  return std::string(DARUMA_BINARY_DIR) + "/daruma";
}

// `daruma serve` for the whole process; killed at exit.
class Broker {
 public:
  static daruma::bench::BrokerProcess& Get(Binary which = kThisBuild) {
    if (which == kBaseline) {
      static daruma::bench::BrokerProcess baseline(BinaryPath(kBaseline));
      return baseline;
    }
    static daruma::bench::BrokerProcess broker(BinaryPath(kThisBuild));
    return broker;
  }
};

rd_kafka_conf_t* Conf(const std::vector<std::pair<std::string, std::string>>& settings) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  for (const auto& [k, v] : settings) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      std::fprintf(stderr, "broker_bench: %s=%s: %s\n", k.c_str(), v.c_str(), err);
      std::abort();
    }
  }
  // DARUMA_BENCH_RDKAFKA="key=value;key=value" adds client settings to every
  // producer and consumer, for experiments (for example "debug=fetch").
  if (const char* extra = std::getenv("DARUMA_BENCH_RDKAFKA")) {
    std::istringstream items(extra);
    std::string item;
    while (std::getline(items, item, ';')) {
      const size_t eq = item.find('=');
      if (eq == std::string::npos) continue;
      const std::string key = item.substr(0, eq);
      if (rd_kafka_conf_set(conf, key.c_str(), item.c_str() + eq + 1, err, sizeof(err)) !=
          RD_KAFKA_CONF_OK) {
        std::fprintf(stderr, "broker_bench: DARUMA_BENCH_RDKAFKA: %s: %s\n", item.c_str(), err);
        std::abort();
      }
    }
  }
  return conf;
}

// ---- loopback TCP ceiling ---------------------------------------------------

double ThreadCpuSeconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) / 1e9;
}

void BM_LoopbackTcp(benchmark::State& state) {
  const int64_t total = DataBytes();
  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  ::listen(listener, 1);
  socklen_t len = sizeof(addr);
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&addr), &len);
  std::vector<char> buffer(1 << 20);
  double sender_cpu = 0;
  for (auto _ : state) {
    std::thread sender([&] {
      const double cpu_before = ThreadCpuSeconds();
      const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
      std::vector<char> chunk(1 << 20, 'x');
      for (int64_t sent = 0; sent < total;) {
        const ssize_t n = ::write(fd, chunk.data(), chunk.size());
        if (n <= 0) break;
        sent += n;
      }
      ::close(fd);
      sender_cpu += ThreadCpuSeconds() - cpu_before;  // read after join
    });
    const int fd = ::accept(listener, nullptr, nullptr);
    int64_t received = 0;
    for (ssize_t n; (n = ::read(fd, buffer.data(), buffer.size())) > 0;) received += n;
    ::close(fd);
    sender.join();
    if (received < total) state.SkipWithError("loopback transfer cut short");
  }
  ::close(listener);
  state.SetBytesProcessed(state.iterations() * total);
  // On loopback the sender's system calls also run the receiving side's TCP
  // processing (the softirq runs in the sender's context); only the final
  // copy to the reader is the reader's. Compare with the broker's CPU per GB
  // of a consume, where the broker is the sender.
  state.counters["sender_cpu_s_per_GB"] =
      sender_cpu / (double(state.iterations()) * double(total) / 1e9);
}

// ---- page-cache write ceiling ---------------------------------------------

// write() of 1 MiB chunks into a new file in $TMPDIR (no fsync): what a
// produce costs the kernel before any broker code runs (the log's appends are
// buffered writes of the request's batches).
void BM_FileWriteBaseline(benchmark::State& state) {
  const int64_t total = DataBytes();
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/daruma-broker-bench-write-" +
                           std::to_string(::getpid());
  std::vector<char> chunk(1 << 20, 'w');
  for (auto _ : state) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    for (int64_t written = 0; written < total;) {
      const ssize_t n = ::write(fd, chunk.data(), chunk.size());
      if (n <= 0) break;
      written += n;
    }
    ::close(fd);
    state.PauseTiming();
    ::unlink(path.c_str());
    state.ResumeTiming();
  }
  state.SetBytesProcessed(state.iterations() * total);
}

// ---- produce ----------------------------------------------------------------

struct ProduceStats {
  std::atomic<int64_t> delivered{0};
  std::atomic<int64_t> failed{0};
  std::vector<double> latency_ms;  // written by the poll thread only
  // librdkafka's statistics (statistics.interval.ms), when asked for: the
  // newest JSON and how many arrived.
  std::string last_stats;
  int stats_seen = 0;
  // Produce round trips the client saw (librdkafka's per-broker `rtt`
  // windows, weighted by their counts), in microseconds.
  double rtt_us_sum = 0;
  int64_t rtt_count = 0;
};

int OnStats(rd_kafka_t*, char* json, size_t json_len, void* opaque) {
  auto* stats = static_cast<ProduceStats*>(opaque);
  stats->last_stats.assign(json, json_len);
  ++stats->stats_seen;
  const nlohmann::json j = nlohmann::json::parse(stats->last_stats, nullptr, false);
  if (j.is_object() && j.contains("brokers")) {
    for (const auto& [name, b] : j["brokers"].items()) {
      if (!b.contains("nodeid") || b["nodeid"].get<int64_t>() < 0 || !b.contains("rtt")) continue;
      const int64_t cnt = b["rtt"].value("cnt", int64_t(0));
      stats->rtt_us_sum += b["rtt"].value("avg", 0.0) * double(cnt);
      stats->rtt_count += cnt;
    }
  }
  return 0;
}

void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* stats = static_cast<ProduceStats*>(opaque);
  if (m->err) {
    ++stats->failed;
    return;
  }
  const auto sent = Clock::time_point(Clock::duration(reinterpret_cast<intptr_t>(m->_private)));
  stats->latency_ms.push_back(
      std::chrono::duration<double, std::milli>(Clock::now() - sent).count());
  ++stats->delivered;
}

// What BM_Consume reads, per Binary.
std::string g_last_topic[2];
int64_t g_last_count[2] = {0, 0};

// CPU seconds (user + system) of this whole process: the benchmark thread
// and librdkafka's threads, i.e. what the client costs.
double ClientCpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) { return double(tv.tv_sec) + double(tv.tv_usec) / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

double Percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, size_t(p * double(v.size())));
  std::nth_element(v.begin(), v.begin() + ptrdiff_t(i), v.end());
  return v[i];
}

// `extra`: settings added to (or replacing) these.
rd_kafka_t* MakeProducer(const daruma::bench::BrokerProcess& broker, const std::string& acks,
                         ProduceStats* stats, bool idempotent = false,
                         const std::vector<std::pair<std::string, std::string>>& extra = {}) {
  char err[512];
  std::vector<std::pair<std::string, std::string>> settings = {
      {"bootstrap.servers", broker.bootstrap()},
      {"enable.idempotence", idempotent ? "true" : "false"},
      {"acks", acks},
      {"linger.ms", "5"},
      {"batch.size", "1048576"},
      {"message.max.bytes", "1048588"},
      {"queue.buffering.max.kbytes", "65536"},
      {"queue.buffering.max.messages", "1000000"},
      {"compression.type", "none"}};
  settings.insert(settings.end(), extra.begin(), extra.end());
  rd_kafka_conf_t* conf = Conf(settings);
  rd_kafka_conf_set_dr_msg_cb(conf, OnDelivery);
  rd_kafka_conf_set_stats_cb(conf, OnStats);
  rd_kafka_conf_set_opaque(conf, stats);
  rd_kafka_t* producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (producer == nullptr) std::fprintf(stderr, "broker_bench: %s\n", err);
  return producer;
}

// Metadata first, so topic auto-creation is not timed.
rd_kafka_topic_t* MakeTopic(rd_kafka_t* producer, const std::string& name) {
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(producer, name.c_str(), nullptr);
  const rd_kafka_metadata_t* md = nullptr;
  rd_kafka_metadata(producer, 0, rkt, &md, 10000);
  if (md != nullptr) rd_kafka_metadata_destroy(md);
  return rkt;
}

// No RD_KAFKA_MSG_F_COPY: `payload` outlives every delivery, so librdkafka
// copies each message once (into the batch), not twice (a malloc'd copy
// first), as Kafka's producer-perf-test reuses one payload array.
void ProduceOne(rd_kafka_t* producer, rd_kafka_topic_t* rkt, const std::string& payload,
                int32_t partition = 0) {
  void* sent = reinterpret_cast<void*>(intptr_t(Clock::now().time_since_epoch().count()));
  while (rd_kafka_produce(rkt, partition, 0, const_cast<char*>(payload.data()), payload.size(),
                          nullptr, 0, sent) != 0) {
    rd_kafka_poll(producer, 1);
  }
}

// Saturating: the producer's queue (64 MiB) stays full, so p50/p99 are
// mostly queueing; BM_ProduceLatency has the unloaded latency.
void ProduceOn(benchmark::State& state, Binary which, bool idempotent = false) {
  daruma::bench::BrokerProcess& broker = Broker::Get(which);
  if (!broker.ok()) return state.SkipWithError("daruma serve did not start");
  const std::string acks = std::to_string(state.range(0));
  const int64_t count = DataBytes() / int64_t(kMessageBytes);
  const std::string payload(kMessageBytes, 'p');
  static int run = 0;
  std::vector<double> latencies;
  double broker_cpu = 0;
  double client_cpu = 0;
  int64_t failed = 0;
  for (auto _ : state) {
    state.PauseTiming();
    const std::string topic = std::string(idempotent ? "bench-idem-acks" : "bench-acks") + acks +
                              "-" + std::to_string(run++);
    ProduceStats stats;
    stats.latency_ms.reserve(size_t(count));
    rd_kafka_t* producer = MakeProducer(broker, acks, &stats, idempotent);
    if (producer == nullptr) return state.SkipWithError("rd_kafka_new failed");
    rd_kafka_topic_t* rkt = MakeTopic(producer, topic);
    const double cpu_before = broker.CpuSeconds();
    const double client_before = ClientCpuSeconds();
    state.ResumeTiming();
    for (int64_t i = 0; i < count; ++i) {
      ProduceOne(producer, rkt, payload);
      if ((i & 1023) == 0) rd_kafka_poll(producer, 0);
    }
    rd_kafka_flush(producer, 120000);
    state.PauseTiming();
    broker_cpu += broker.CpuSeconds() - cpu_before;
    client_cpu += ClientCpuSeconds() - client_before;
    failed += stats.failed.load();
    latencies.insert(latencies.end(), stats.latency_ms.begin(), stats.latency_ms.end());
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(producer);
    g_last_topic[which] = topic;
    g_last_count[which] = count;
    state.ResumeTiming();
  }
  if (failed > 0) state.SkipWithError("some deliveries failed");
  const int64_t total = state.iterations() * count;
  state.SetBytesProcessed(total * int64_t(kMessageBytes));
  state.counters["msgs_per_s"] = benchmark::Counter(double(total), benchmark::Counter::kIsRate);
  state.counters["p50_ms"] = Percentile(latencies, 0.50);
  state.counters["p99_ms"] = Percentile(latencies, 0.99);
  state.counters["broker_cpu_s_per_GB"] =
      broker_cpu / (double(total * int64_t(kMessageBytes)) / 1e9);
  state.counters["client_cpu_s_per_GB"] =
      client_cpu / (double(total * int64_t(kMessageBytes)) / 1e9);
  state.SetLabel(std::string(idempotent ? "idempotent, " : "") + "acks=" + acks);
}

// Unloaded latency: 10,000 msgs/s (10 MB/s) for 2 s, produce() to delivery
// report; linger.ms=5 is part of it.
void BM_ProduceLatency(benchmark::State& state) {
  daruma::bench::BrokerProcess& broker = Broker::Get();
  if (!broker.ok()) return state.SkipWithError("daruma serve did not start");
  const std::string acks = std::to_string(state.range(0));
  const std::string payload(kMessageBytes, 'l');
  constexpr int kPerTick = 100;  // every 10 ms
  constexpr int kTicks = 200;
  std::vector<double> latencies;
  for (auto _ : state) {
    ProduceStats stats;
    rd_kafka_t* producer = MakeProducer(broker, acks, &stats);
    if (producer == nullptr) return state.SkipWithError("rd_kafka_new failed");
    rd_kafka_topic_t* rkt = MakeTopic(producer, "bench-latency-acks" + acks);
    auto next = Clock::now();
    for (int tick = 0; tick < kTicks; ++tick) {
      for (int i = 0; i < kPerTick; ++i) ProduceOne(producer, rkt, payload);
      next += std::chrono::milliseconds(10);
      while (Clock::now() < next) rd_kafka_poll(producer, 1);
    }
    rd_kafka_flush(producer, 60000);
    if (stats.failed.load() > 0) state.SkipWithError("some deliveries failed");
    latencies.insert(latencies.end(), stats.latency_ms.begin(), stats.latency_ms.end());
    rd_kafka_topic_destroy(rkt);
    rd_kafka_destroy(producer);
  }
  state.SetBytesProcessed(int64_t(latencies.size()) * int64_t(kMessageBytes));
  state.counters["p50_ms"] = Percentile(latencies, 0.50);
  state.counters["p99_ms"] = Percentile(latencies, 0.99);
  state.SetLabel("acks=" + acks + ", 10k msgs/s");
}

// ---- consume ----------------------------------------------------------------

// One legacy (group-less) consumer that reads the whole partition `topic`
// from offset 0: created and told the partition's leader, then `ready`, then
// it waits for `go` and consumes `count` messages.
class PartitionReader {
 public:
  PartitionReader(const std::string& bootstrap, const std::string& topic) {
    char err[512];
    // 2 MiB per partition and fetch: of 1, 2, 4 and 10 MiB, 1–2 MiB gave the
    // highest and steadiest rate (librdkafka parses one response while no
    // other is in flight; smaller responses stay in cache while parsed).
    rd_kafka_conf_t* conf = Conf({{"bootstrap.servers", bootstrap},
                                  {"fetch.max.bytes", "52428800"},
                                  {"fetch.message.max.bytes", "2097152"},
                                  {"queued.max.messages.kbytes", "1048576"},
                                  {"fetch.wait.max.ms", "100"}});
    consumer_ = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    if (consumer_ == nullptr) {
      error_ = err;
      return;
    }
    rkt_ = rd_kafka_topic_new(consumer_, topic.c_str(), nullptr);
    // Learn the leader before the clock starts: a consumer started without it
    // waits for librdkafka's 500 ms offset-query retry timer, a client
    // start-up cost that says nothing about the broker.
    const struct rd_kafka_metadata* metadata = nullptr;
    if (rd_kafka_metadata(consumer_, 0, rkt_, &metadata, 5000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
      error_ = "metadata request failed";
      return;
    }
    rd_kafka_metadata_destroy(metadata);
  }
  ~PartitionReader() {
    if (rkt_ != nullptr) rd_kafka_topic_destroy(rkt_);
    if (consumer_ != nullptr) rd_kafka_destroy(consumer_);
  }

  const std::string& error() const { return error_; }

  // The value bytes of `count` messages, or fewer if 120 s pass first.
  int64_t ReadAll(int64_t count) {
    rd_kafka_consume_start(rkt_, 0, RD_KAFKA_OFFSET_BEGINNING);
    std::vector<rd_kafka_message_t*> batch(10000);
    int64_t got = 0;
    int64_t bytes = 0;
    const auto deadline = Clock::now() + std::chrono::seconds(120);
    while (got < count && Clock::now() < deadline) {
      // Ask for no more than what is left: consume_batch waits out its whole
      // timeout when fewer messages than asked for will ever arrive.
      const size_t want = size_t(std::min<int64_t>(int64_t(batch.size()), count - got));
      const ssize_t n = rd_kafka_consume_batch(rkt_, 0, 1000, batch.data(), want);
      for (ssize_t i = 0; i < n; ++i) {
        if (batch[size_t(i)]->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
          ++got;
          bytes += int64_t(batch[size_t(i)]->len);
        }
        rd_kafka_message_destroy(batch[size_t(i)]);
      }
    }
    rd_kafka_consume_stop(rkt_, 0);
    return got == count ? bytes : -1;
  }

 private:
  rd_kafka_t* consumer_ = nullptr;
  rd_kafka_topic_t* rkt_ = nullptr;
  std::string error_;
};

// Arg: how many consumers read the whole partition at once, each with its own
// client (librdkafka fetches one response at a time per broker connection, so
// one consumer is bounded by its own fetch thread; two show what the broker
// serves when the client is not the limit).
void ConsumeOn(benchmark::State& state, Binary which) {
  daruma::bench::BrokerProcess& broker = Broker::Get(which);
  if (!broker.ok() || g_last_topic[which].empty()) {
    return state.SkipWithError("no produced topic (BM_Produce must run first)");
  }
  const int consumers = int(state.range(0));
  double broker_cpu = 0;
  double client_cpu = 0;
  int64_t bytes = 0;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<std::unique_ptr<PartitionReader>> readers;
    for (int i = 0; i < consumers; ++i) {
      readers.push_back(std::make_unique<PartitionReader>(broker.bootstrap(), g_last_topic[which]));
      if (!readers.back()->error().empty())
        return state.SkipWithError(readers.back()->error().c_str());
    }
    const double cpu_before = broker.CpuSeconds();
    const double client_before = ClientCpuSeconds();
    state.ResumeTiming();
    std::vector<int64_t> read(size_t(consumers), 0);
    std::vector<std::thread> threads;
    for (int i = 0; i < consumers; ++i) {
      threads.emplace_back(
          [&, i] { read[size_t(i)] = readers[size_t(i)]->ReadAll(g_last_count[which]); });
    }
    for (std::thread& t : threads) t.join();
    state.PauseTiming();
    broker_cpu += broker.CpuSeconds() - cpu_before;
    client_cpu += ClientCpuSeconds() - client_before;
    readers.clear();
    state.ResumeTiming();
    for (int64_t r : read) {
      if (r < 0) return state.SkipWithError("consumer timed out");
      bytes += r;
    }
  }
  state.SetBytesProcessed(bytes);
  state.counters["msgs_per_s"] =
      benchmark::Counter(double(bytes / int64_t(kMessageBytes)), benchmark::Counter::kIsRate);
  state.counters["broker_cpu_s_per_GB"] = broker_cpu / (double(bytes) / 1e9);
  state.counters["client_cpu_s_per_GB"] = client_cpu / (double(bytes) / 1e9);
  state.SetLabel(consumers == 1 ? "1 consumer" : std::to_string(consumers) + " consumers");
}

void BM_Produce(benchmark::State& state) {
  ProduceOn(state, kThisBuild);
}
// Kafka's Java producer default since 3.0: enable.idempotence with acks=all,
// against BM_Produce/-1 in the same run (issue 20: >= 90 % of it).
void BM_ProduceIdempotent(benchmark::State& state) {
  ProduceOn(state, kThisBuild, /*idempotent=*/true);
}

// ---- plain vs idempotent, interleaved -----------------------------------------

// Creates `topic` with `partitions` partitions (the broker's default is 1).
bool CreateTopic(rd_kafka_t* rk, const std::string& topic, int partitions) {
  char err[256];
  rd_kafka_NewTopic_t* t = rd_kafka_NewTopic_new(topic.c_str(), partitions, 1, err, sizeof(err));
  if (t == nullptr) return false;
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  rd_kafka_CreateTopics(rk, &t, 1, nullptr, queue);
  bool ok = false;
  if (rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, 30000)) {
    const rd_kafka_CreateTopics_result_t* result = rd_kafka_event_CreateTopics_result(ev);
    size_t n = 0;
    const rd_kafka_topic_result_t** topics =
        result != nullptr ? rd_kafka_CreateTopics_result_topics(result, &n) : nullptr;
    ok = n == 1 && rd_kafka_topic_result_error(topics[0]) == RD_KAFKA_RESP_ERR_NO_ERROR;
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_queue_destroy(queue);
  rd_kafka_NewTopic_destroy(t);
  return ok;
}

// Deletes `topic` (so ten runs of DataBytes() do not pile up on the disk).
void DeleteTopic(rd_kafka_t* rk, const std::string& topic) {
  rd_kafka_DeleteTopic_t* del = rd_kafka_DeleteTopic_new(topic.c_str());
  rd_kafka_queue_t* queue = rd_kafka_queue_new(rk);
  rd_kafka_DeleteTopics(rk, &del, 1, nullptr, queue);
  if (rd_kafka_event_t* ev = rd_kafka_queue_poll(queue, 30000)) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(queue);
  rd_kafka_DeleteTopic_destroy(del);
}

struct PairedRun {
  double seconds = 0;
  double broker_cpu_s = 0;
  double client_cpu_s = 0;
  int64_t produce_requests = 0;  // from librdkafka's statistics
  double rtt_ms = 0;             // the mean request round trip, ditto
  bool failed = false;
};

// Writes `bytes` into a scratch file in $TMPDIR, syncs and deletes it: the
// page cache pages the next produce will take are then ones the VM has just
// used. On a VM with free page reporting (virtio-balloon; this benchmark
// machine) a page the guest freed a few seconds ago goes back to the host, and
// the first write into it costs a host page fault: writing 1 GiB into new
// files took 0.13 s for the first ~2 GiB and ~1.6 s (all system time) after,
// which would show as broker CPU and halve whichever produce ran after the
// warm pages ran out. Untimed; DARUMA_BENCH_PAIRED_PREFAULT=0 turns it off.
void PrefaultPageCache(int64_t bytes) {
  const char* env = std::getenv("DARUMA_BENCH_PAIRED_PREFAULT");
  if (env != nullptr && std::string(env) == "0") return;
  const char* tmp = std::getenv("TMPDIR");
  const std::string path = std::string(tmp && *tmp ? tmp : "/tmp") +
                           "/daruma-broker-bench-prefault-" + std::to_string(::getpid());
  std::vector<char> chunk(1 << 20, 'f');
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (int64_t written = 0; fd >= 0 && written < bytes;) {
    const ssize_t n = ::write(fd, chunk.data(), chunk.size());
    if (n <= 0) break;
    written += n;
  }
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  ::unlink(path.c_str());
}

// One produce of DataBytes() to a new topic of `partitions` partitions
// (messages dealt round robin) with acks=all and `extra` settings, after
// PrefaultPageCache; the topic is deleted and everything synced afterwards,
// untimed.
PairedRun ProducePaired(daruma::bench::BrokerProcess& broker, bool idempotent, int partitions,
                        const std::vector<std::pair<std::string, std::string>>& extra) {
  static int run = 0;
  const int64_t count = DataBytes() / int64_t(kMessageBytes);
  const std::string payload(kMessageBytes, 'q');
  const std::string topic = std::string(idempotent ? "bench-paired-idem-" : "bench-paired-plain-") +
                            std::to_string(run++);
  ProduceStats stats;
  stats.latency_ms.reserve(size_t(count));
  PairedRun out;
  rd_kafka_t* producer = MakeProducer(broker, "-1", &stats, idempotent, extra);
  if (producer == nullptr) {
    out.failed = true;
    return out;
  }
  if (partitions > 1 && !CreateTopic(producer, topic, partitions)) {
    rd_kafka_destroy(producer);
    out.failed = true;
    return out;
  }
  rd_kafka_topic_t* rkt = MakeTopic(producer, topic);
  PrefaultPageCache(DataBytes() + (64 << 20));
  const double cpu_before = broker.CpuSeconds();
  const double client_before = ClientCpuSeconds();
  const auto start = Clock::now();
  for (int64_t i = 0; i < count; ++i) {
    ProduceOne(producer, rkt, payload, int32_t(i % partitions));
    if ((i & 1023) == 0) rd_kafka_poll(producer, 0);
  }
  rd_kafka_flush(producer, 120000);
  out.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  out.broker_cpu_s = broker.CpuSeconds() - cpu_before;
  out.client_cpu_s = ClientCpuSeconds() - client_before;
  out.failed = stats.failed.load() > 0 || stats.delivered.load() != count;
  // The request count of the whole run: wait for the next statistics.
  const int seen = stats.stats_seen;
  for (int i = 0; i < 300 && stats.stats_seen == seen; ++i) rd_kafka_poll(producer, 10);
  if (!stats.last_stats.empty()) {
    const nlohmann::json j = nlohmann::json::parse(stats.last_stats, nullptr, false);
    if (j.is_object() && j.contains("brokers")) {
      for (const auto& [name, b] : j["brokers"].items()) {
        if (b.contains("req") && b["req"].contains("Produce")) {
          out.produce_requests += b["req"]["Produce"].get<int64_t>();
        }
      }
    }
  }
  if (stats.rtt_count > 0) out.rtt_ms = stats.rtt_us_sum / double(stats.rtt_count) / 1000;
  DeleteTopic(producer, topic);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(producer);
  ::sync();
  return out;
}

double MedianOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()      ? 0
         : v.size() % 2 ? v[v.size() / 2]
                        : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Issue 20: idempotent produce >= 0.9 of plain. $DARUMA_BENCH_PAIRED_REPS
// (default 5) runs of each, interleaved P I, I P, P I, ... so page-cache and
// ordering effects fall on both alike, each a fresh producer and topic,
// acks=all, and the same settings, statistics every second for the request
// counts and round trips. Arg: max.in.flight for both. 5: librdkafka's cap
// for an idempotent producer (a plain one defaults to 1,000,000); but
// librdkafka 2.x keeps only one ProduceRequest per partition in flight when
// idempotent (it compares the partition's in-flight *message* count with
// the 5-request window: confluentinc/librdkafka PR #4989), so a plain
// producer pipelines 5 and the idempotent one 1. 1: both send one request
// at a time, the comparison that isolates the broker's cost of idempotence.
// Second arg: the topic's partitions, messages dealt round robin. With 8,
// each producer can keep 5 requests in flight (one per partition when
// idempotent), as a producer to a multi-partition topic does in production.
// Counters: medians and ranges of GB/s, idempotent/plain ratio of the
// medians, broker and client CPU s/GB, average Produce request size (equal
// batching) and round trip (rtt_ms: ~5x the service time when 5 are queued).
void BM_ProducePlainVsIdempotent(benchmark::State& state) {
  daruma::bench::BrokerProcess& broker = Broker::Get();
  if (!broker.ok()) return state.SkipWithError("daruma serve did not start");
  const char* reps_env = std::getenv("DARUMA_BENCH_PAIRED_REPS");
  const int reps = reps_env != nullptr && *reps_env != '\0' ? std::atoi(reps_env) : 5;
  const std::string in_flight = std::to_string(state.range(0));
  const int partitions = int(state.range(1));
  const std::vector<std::pair<std::string, std::string>> extra = {
      {"max.in.flight.requests.per.connection", in_flight}, {"statistics.interval.ms", "1000"}};
  const double bytes = double(DataBytes() / int64_t(kMessageBytes) * int64_t(kMessageBytes));
  std::vector<double> gbps[2], broker_cpu[2], client_cpu[2], request_kib[2], rtt_ms[2];
  for (auto _ : state) {
    double total = 0;
    for (int pair = 0; pair < reps; ++pair) {
      for (int k = 0; k < 2; ++k) {
        const bool idempotent = (pair % 2 == 0) == (k == 1);  // P I, I P, ...
        const PairedRun r = ProducePaired(broker, idempotent, partitions, extra);
        if (r.failed) return state.SkipWithError("some deliveries failed");
        total += r.seconds;
        std::fprintf(stderr,
                     "broker_bench: max.in.flight=%s partitions=%d paired run %d %-10s %.3f GB/s, "
                     "broker %.2f s/GB, client %.2f s/GB, %lld Produce requests, rtt %.2f ms\n",
                     in_flight.c_str(), partitions, pair, idempotent ? "idempotent" : "plain",
                     bytes / r.seconds / 1e9, r.broker_cpu_s / (bytes / 1e9),
                     r.client_cpu_s / (bytes / 1e9), static_cast<long long>(r.produce_requests),
                     r.rtt_ms);
        gbps[idempotent].push_back(bytes / r.seconds / 1e9);
        broker_cpu[idempotent].push_back(r.broker_cpu_s / (bytes / 1e9));
        client_cpu[idempotent].push_back(r.client_cpu_s / (bytes / 1e9));
        if (r.rtt_ms > 0) rtt_ms[idempotent].push_back(r.rtt_ms);
        if (r.produce_requests > 0) {
          request_kib[idempotent].push_back(bytes / double(r.produce_requests) / 1024);
        }
      }
    }
    state.SetIterationTime(total);
  }
  for (int idem = 0; idem < 2; ++idem) {
    const std::string kind = idem ? "idem_" : "plain_";
    state.counters[kind + "GBps_median"] = MedianOf(gbps[idem]);
    state.counters[kind + "GBps_min"] = *std::min_element(gbps[idem].begin(), gbps[idem].end());
    state.counters[kind + "GBps_max"] = *std::max_element(gbps[idem].begin(), gbps[idem].end());
    state.counters[kind + "broker_cpu_s_per_GB"] = MedianOf(broker_cpu[idem]);
    state.counters[kind + "client_cpu_s_per_GB"] = MedianOf(client_cpu[idem]);
    state.counters[kind + "request_KiB"] = MedianOf(request_kib[idem]);
    state.counters[kind + "rtt_ms"] = MedianOf(rtt_ms[idem]);
  }
  state.counters["idem_vs_plain"] = MedianOf(gbps[1]) / MedianOf(gbps[0]);
  state.counters["reps"] = reps;
  state.counters["partitions"] = partitions;
  state.SetLabel("acks=-1, max.in.flight=" + in_flight + ", " + std::to_string(partitions) +
                 " partition(s), interleaved; target idem_vs_plain >= 0.9");
}

void BM_ProduceBaseline(benchmark::State& state) {
  ProduceOn(state, kBaseline);
}
void BM_Consume(benchmark::State& state) {
  ConsumeOn(state, kThisBuild);
}
void BM_ConsumeBaseline(benchmark::State& state) {
  ConsumeOn(state, kBaseline);
}

BENCHMARK(BM_LoopbackTcp)->Iterations(3)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FileWriteBaseline)->Iterations(2)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Produce)->Arg(1)->Arg(-1)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ProduceLatency)
    ->Arg(1)
    ->Arg(-1)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_Consume)->Arg(1)->Arg(2)->Iterations(1)->UseRealTime()->Unit(benchmark::kMillisecond);
// After the consume, which keeps reading the plain acks=-1 topic.
BENCHMARK(BM_ProduceIdempotent)
    ->Arg(-1)
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

BENCHMARK(BM_ProducePlainVsIdempotent)
    ->Args({5, 1})
    ->Args({1, 1})
    ->Args({5, 8})
    ->Args({5, 2})
    ->Args({5, 4})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  // The baseline runs right after this build's produce (and consume), so the
  // two see the same machine state.
  if (!BinaryPath(kBaseline).empty()) {
    benchmark::RegisterBenchmark("BM_ProduceBaseline", BM_ProduceBaseline)
        ->Arg(1)
        ->Arg(-1)
        ->Iterations(1)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("BM_ConsumeBaseline", BM_ConsumeBaseline)
        ->Arg(1)
        ->Arg(2)
        ->Iterations(1)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
