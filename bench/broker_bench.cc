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
};

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

rd_kafka_t* MakeProducer(const daruma::bench::BrokerProcess& broker, const std::string& acks,
                         ProduceStats* stats, bool idempotent = false) {
  char err[512];
  rd_kafka_conf_t* conf = Conf({{"bootstrap.servers", broker.bootstrap()},
                                {"enable.idempotence", idempotent ? "true" : "false"},
                                {"acks", acks},
                                {"linger.ms", "5"},
                                {"batch.size", "1048576"},
                                {"message.max.bytes", "1048588"},
                                {"queue.buffering.max.kbytes", "65536"},
                                {"queue.buffering.max.messages", "1000000"},
                                {"compression.type", "none"}});
  rd_kafka_conf_set_dr_msg_cb(conf, OnDelivery);
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
void ProduceOne(rd_kafka_t* producer, rd_kafka_topic_t* rkt, const std::string& payload) {
  void* sent = reinterpret_cast<void*>(intptr_t(Clock::now().time_since_epoch().count()));
  while (rd_kafka_produce(rkt, 0, 0, const_cast<char*>(payload.data()), payload.size(), nullptr, 0,
                          sent) != 0) {
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
