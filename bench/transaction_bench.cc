// Transactions end to end (issue 20): a real `daruma serve` child process
// (broker_process.h) driven by librdkafka's C API over loopback.
//
//   BM_Transactions/N   one transactional producer (acks=all, as
//                       transactions require) runs transactions one after
//                       another: begin, N messages of 1 KiB spread evenly
//                       over the 3 partitions of one topic, commit (which
//                       flushes, then EndTxn; the broker writes PrepareCommit,
//                       3 markers and CompleteCommit before answering). The
//                       producer's AddPartitionsToTxn comes with the first
//                       message to each partition.
//                       Baseline in the same benchmark, interleaved with it
//                       ($DARUMA_BENCH_TXN_ROUNDS rounds, default 3, of
//                       $DARUMA_BENCH_TXN_SECONDS seconds each, default 2, in
//                       the order B T, T B, B T, ...): the same N messages
//                       from an idempotent, non-transactional producer with
//                       the same settings, flushed after every N (one
//                       "transaction's" worth waited for, without the
//                       transaction). Counters are medians over the rounds:
//                       txns_per_s and msgs_per_s, baseline_flushes_per_s and
//                       baseline_msgs_per_s, txn_vs_baseline (msgs/s ratio),
//                       p50/p99 ms of one transaction (commit included) and
//                       of one baseline flush, the broker's CPU ms per
//                       transaction / per flush.
//
// The broker runs with Kafka's defaults (page cache, no fsync per message);
// `__transaction_state` is created by the first InitProducerId, before the
// clock starts.
#include <benchmark/benchmark.h>
#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "broker_process.h"

namespace {

using daruma::bench::BrokerProcess;
using SteadyClock = std::chrono::steady_clock;

constexpr int kPartitions = 3;
constexpr size_t kMessageBytes = 1024;
constexpr char kTopic[] = "txn-bench";

BrokerProcess& Broker() {
  static BrokerProcess broker(std::string(DARUMA_BINARY_DIR) + "/daruma",
                              "num.partitions=" + std::to_string(kPartitions) + "\n");
  return broker;
}

int EnvInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty()      ? 0
         : v.size() % 2 ? v[v.size() / 2]
                        : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  const size_t i = std::min(v.size() - 1, size_t(p * double(v.size())));
  std::nth_element(v.begin(), v.begin() + ptrdiff_t(i), v.end());
  return v[i];
}

std::atomic<int64_t> g_failed{0};

void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void*) {
  if (m->err) ++g_failed;
}

// The producer of either kind, with the same settings: broker_bench's
// produce settings, enable.idempotence (acks=all, max.in.flight 5).
rd_kafka_t* MakeProducer(const std::string& transactional_id) {
  std::vector<std::pair<std::string, std::string>> settings = {
      {"bootstrap.servers", Broker().bootstrap()},
      {"enable.idempotence", "true"},
      {"acks", "all"},
      {"max.in.flight.requests.per.connection", "5"},
      {"linger.ms", "5"},
      {"batch.size", "1048576"},
      {"message.max.bytes", "1048588"},
      {"queue.buffering.max.kbytes", "65536"},
      {"compression.type", "none"}};
  if (!transactional_id.empty()) {
    settings.push_back({"transactional.id", transactional_id});
    settings.push_back({"transaction.timeout.ms", "60000"});
  }
  // DARUMA_BENCH_RDKAFKA="key=value;key=value" adds client settings to both
  // producers, for experiments (for example "debug=eos").
  if (const char* extra = std::getenv("DARUMA_BENCH_RDKAFKA")) {
    std::istringstream items(extra);
    std::string item;
    while (std::getline(items, item, ';')) {
      const size_t eq = item.find('=');
      if (eq != std::string::npos) settings.push_back({item.substr(0, eq), item.substr(eq + 1)});
    }
  }
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  for (const auto& [k, v] : settings) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      std::fprintf(stderr, "transaction_bench: %s=%s: %s\n", k.c_str(), v.c_str(), err);
      std::abort();
    }
  }
  rd_kafka_conf_set_dr_msg_cb(conf, OnDelivery);
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  if (rk == nullptr) {
    std::fprintf(stderr, "transaction_bench: %s\n", err);
    std::abort();
  }
  // Metadata first, so topic creation is not timed.
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, kTopic, nullptr);
  for (int i = 0; i < 100; ++i) {
    const rd_kafka_metadata_t* md = nullptr;
    if (rd_kafka_metadata(rk, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const bool ready = md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
                         md->topics[0].partition_cnt >= kPartitions;
      rd_kafka_metadata_destroy(md);
      if (ready) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  rd_kafka_topic_destroy(rkt);
  if (!transactional_id.empty()) {
    if (rd_kafka_error_t* e = rd_kafka_init_transactions(rk, 60000)) {
      std::fprintf(stderr, "transaction_bench: init_transactions: %s\n", rd_kafka_error_string(e));
      std::abort();
    }
  }
  return rk;
}

struct Phase {
  int64_t units = 0;  // transactions or flushes
  double seconds = 0;
  double broker_cpu_s = 0;
  std::vector<double> unit_ms;
  std::string error;
};

// Transactions (or, for the baseline, flushed groups) of `n` messages for
// `seconds`.
Phase Run(rd_kafka_t* rk, bool transactional, int n, double seconds) {
  const std::string payload(kMessageBytes, 't');
  Phase out;
  g_failed = 0;
  const double cpu_before = Broker().CpuSeconds();
  const auto start = SteadyClock::now();
  while (out.seconds < seconds) {
    const auto unit_start = SteadyClock::now();
    if (transactional) {
      if (rd_kafka_error_t* e = rd_kafka_begin_transaction(rk)) {
        out.error = std::string("begin_transaction: ") + rd_kafka_error_string(e);
        rd_kafka_error_destroy(e);
        return out;
      }
    }
    for (int m = 0; m < n; ++m) {
      const rd_kafka_resp_err_t err = rd_kafka_producev(
          rk, RD_KAFKA_V_TOPIC(kTopic), RD_KAFKA_V_PARTITION(m % kPartitions),
          RD_KAFKA_V_VALUE(const_cast<char*>(payload.data()), payload.size()), RD_KAFKA_V_END);
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        out.error = std::string("produce: ") + rd_kafka_err2str(err);
        return out;
      }
    }
    if (transactional) {
      if (rd_kafka_error_t* e = rd_kafka_commit_transaction(rk, 60000)) {
        out.error = std::string("commit_transaction: ") + rd_kafka_error_string(e);
        rd_kafka_error_destroy(e);
        return out;
      }
    } else {
      rd_kafka_flush(rk, 60000);
    }
    if (g_failed > 0) {
      out.error = "a delivery failed";
      return out;
    }
    out.unit_ms.push_back(SecondsSince(unit_start) * 1000);
    ++out.units;
    out.seconds = SecondsSince(start);
  }
  out.broker_cpu_s = Broker().CpuSeconds() - cpu_before;
  return out;
}

void BM_Transactions(benchmark::State& state) {
  const int n = int(state.range(0));
  if (!Broker().ok()) return state.SkipWithError("the broker did not start");
  const int rounds = EnvInt("DARUMA_BENCH_TXN_ROUNDS", 3);
  const double seconds = EnvInt("DARUMA_BENCH_TXN_SECONDS", 2);
  rd_kafka_t* txn = MakeProducer("bench-txn-" + std::to_string(n));
  rd_kafka_t* idem = MakeProducer("");
  // One short unmeasured round of each: connections, AddPartitionsToTxn's
  // first answer, the logs' first pages.
  for (bool t : {false, true}) {
    if (Phase warm = Run(t ? txn : idem, t, n, 0.2); !warm.error.empty()) {
      return state.SkipWithError(warm.error.c_str());
    }
  }
  std::vector<double> txns_per_s, msgs_per_s, flushes_per_s, base_msgs_per_s, txn_ms, flush_ms,
      txn_cpu_ms, flush_cpu_ms;
  for (auto _ : state) {
    double measured = 0;
    for (int r = 0; r < rounds; ++r) {
      for (int k = 0; k < 2; ++k) {
        const bool transactional = (r % 2 == 0) == (k == 1);  // B T, T B, ...
        Phase p = Run(transactional ? txn : idem, transactional, n, seconds);
        if (!p.error.empty()) return state.SkipWithError(p.error.c_str());
        measured += p.seconds;
        std::fprintf(stderr, "transaction_bench: n=%d round %d %-13s %.0f/s, broker %.3f ms each\n",
                     n, r, transactional ? "transactions" : "flushes", double(p.units) / p.seconds,
                     p.broker_cpu_s * 1000 / double(p.units));
        const double units = double(p.units) / p.seconds;
        const double cpu_ms = p.broker_cpu_s * 1000 / double(p.units);
        if (transactional) {
          txns_per_s.push_back(units);
          msgs_per_s.push_back(units * n);
          txn_ms.insert(txn_ms.end(), p.unit_ms.begin(), p.unit_ms.end());
          txn_cpu_ms.push_back(cpu_ms);
        } else {
          flushes_per_s.push_back(units);
          base_msgs_per_s.push_back(units * n);
          flush_ms.insert(flush_ms.end(), p.unit_ms.begin(), p.unit_ms.end());
          flush_cpu_ms.push_back(cpu_ms);
        }
      }
    }
    state.SetIterationTime(measured);
  }
  rd_kafka_destroy(txn);
  rd_kafka_destroy(idem);
  auto minmax = [&](const char* name, const std::vector<double>& v) {
    state.counters[std::string(name) + "_min"] = *std::min_element(v.begin(), v.end());
    state.counters[std::string(name) + "_max"] = *std::max_element(v.begin(), v.end());
  };
  state.counters["txns_per_s"] = Median(txns_per_s);
  minmax("txns_per_s", txns_per_s);
  state.counters["msgs_per_s"] = Median(msgs_per_s);
  state.counters["baseline_flushes_per_s"] = Median(flushes_per_s);
  minmax("baseline_flushes_per_s", flushes_per_s);
  state.counters["baseline_msgs_per_s"] = Median(base_msgs_per_s);
  state.counters["txn_vs_baseline"] = Median(msgs_per_s) / Median(base_msgs_per_s);
  state.counters["txn_p50_ms"] = Percentile(txn_ms, 0.50);
  state.counters["txn_p99_ms"] = Percentile(txn_ms, 0.99);
  state.counters["baseline_flush_p50_ms"] = Percentile(flush_ms, 0.50);
  state.counters["baseline_flush_p99_ms"] = Percentile(flush_ms, 0.99);
  state.counters["broker_cpu_ms_per_txn"] = Median(txn_cpu_ms);
  state.counters["baseline_broker_cpu_ms_per_flush"] = Median(flush_cpu_ms);
  state.counters["rounds"] = rounds;
  state.SetLabel(std::to_string(n) + " x 1 KiB msgs over " + std::to_string(kPartitions) +
                 " partitions per txn, acks=all");
}

BENCHMARK(BM_Transactions)
    ->Arg(3)
    ->Arg(30)
    ->Arg(300)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
