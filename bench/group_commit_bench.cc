// Consumer groups end to end (issue 21): a real `daruma serve` child process
// (broker_process.h) driven by librdkafka's C API over loopback, each figure
// beside a baseline measured in the same run:
//
//   BM_CommitSync/P      one consumer commits P partitions per OffsetCommit
//                        and waits for each answer (rd_kafka_commit, async=0):
//                        one connection, one request in flight
//   BM_CommitAsync/P     the same with async commits, up to 1,000 in flight
//                        (librdkafka pipelines them on its one coordinator
//                        connection; the broker answers in order)
//   BM_ProduceSyncBaseline  the round-trip ceiling: one 100-byte message
//                        produced with acks=1, waiting for each delivery
//   BM_Rebalance/N       N consumers subscribe to a 100-partition topic in a
//                        new group; time until every one has its share and
//                        the shares add up to the topic
//                        (group.initial.rebalance.delay.ms=0 on this broker;
//                        Kafka's default adds 3 s)
//
// Counters: commits/s (requests) and partition_commits/s. The target:
// >= 50,000 commits/s on one connection with batched partitions.
#include <benchmark/benchmark.h>
#include <librdkafka/rdkafka.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <string>
#include <vector>

#include "broker_process.h"

namespace {

using daruma::bench::BrokerProcess;
using SteadyClock = std::chrono::steady_clock;

constexpr int kTopicPartitions = 100;
constexpr char kTopic[] = "commits";

BrokerProcess& Broker() {
  static BrokerProcess broker(std::string(DARUMA_BINARY_DIR) + "/daruma",
                              "group.initial.rebalance.delay.ms=0\nnum.partitions=" +
                                  std::to_string(kTopicPartitions) + "\n");
  return broker;
}

rd_kafka_t* Client(rd_kafka_type_t type,
                   const std::vector<std::pair<std::string, std::string>>& settings) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  std::vector<std::pair<std::string, std::string>> all = {
      {"bootstrap.servers", Broker().bootstrap()}};
  all.insert(all.end(), settings.begin(), settings.end());
  for (const auto& [k, v] : all) {
    if (rd_kafka_conf_set(conf, k.c_str(), v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK) {
      std::fprintf(stderr, "group_commit_bench: %s=%s: %s\n", k.c_str(), v.c_str(), err);
      std::abort();
    }
  }
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof(err));
  if (rk == nullptr) {
    std::fprintf(stderr, "group_commit_bench: %s\n", err);
    std::abort();
  }
  return rk;
}

// Creates `topic` (auto-created with num.partitions by a metadata request)
// and waits until it has `partitions` partitions.
void EnsureTopic(const std::string& topic, int partitions) {
  rd_kafka_t* p = Client(RD_KAFKA_PRODUCER, {});
  rd_kafka_topic_t* t = rd_kafka_topic_new(p, topic.c_str(), nullptr);
  for (int i = 0; i < 100; ++i) {
    const rd_kafka_metadata_t* md = nullptr;
    if (rd_kafka_metadata(p, 0, t, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const bool ready = md->topic_cnt == 1 && md->topics[0].err == RD_KAFKA_RESP_ERR_NO_ERROR &&
                         md->topics[0].partition_cnt >= partitions;
      rd_kafka_metadata_destroy(md);
      if (ready) break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  rd_kafka_topic_destroy(t);
  rd_kafka_destroy(p);
}

rd_kafka_topic_partition_list_t* Offsets(int partitions, int64_t offset) {
  rd_kafka_topic_partition_list_t* list = rd_kafka_topic_partition_list_new(partitions);
  for (int p = 0; p < partitions; ++p)
    rd_kafka_topic_partition_list_add(list, kTopic, p)->offset = offset;
  return list;
}

void Rates(benchmark::State& state, int64_t commits, int partitions, double seconds) {
  state.counters["commits_per_s"] = double(commits) / seconds;
  state.counters["partition_commits_per_s"] = double(commits) * partitions / seconds;
  state.SetIterationTime(seconds);
}

constexpr double kRunSeconds = 3.0;

double SecondsSince(SteadyClock::time_point start) {
  return std::chrono::duration<double>(SteadyClock::now() - start).count();
}

// A consumer of `group` that commits only when told, on kTopic (created
// first).
rd_kafka_t* Committer(const std::string& group) {
  EnsureTopic(kTopic, kTopicPartitions);
  return Client(RD_KAFKA_CONSUMER, {{"group.id", group}, {"enable.auto.commit", "false"}});
}

void CloseConsumer(rd_kafka_t* c) {
  rd_kafka_consumer_close(c);
  rd_kafka_destroy(c);
}

void BM_CommitSync(benchmark::State& state) {
  const int partitions = int(state.range(0));
  if (!Broker().ok()) return state.SkipWithError("the broker did not start");
  rd_kafka_t* c = Committer("sync-" + std::to_string(partitions));
  for (auto _ : state) {
    int64_t commits = 0;
    const auto start = SteadyClock::now();
    double elapsed = 0;
    while (elapsed < kRunSeconds) {
      rd_kafka_topic_partition_list_t* list = Offsets(partitions, commits + 1);
      const rd_kafka_resp_err_t err = rd_kafka_commit(c, list, 0);
      rd_kafka_topic_partition_list_destroy(list);
      if (err != RD_KAFKA_RESP_ERR_NO_ERROR) return state.SkipWithError(rd_kafka_err2str(err));
      ++commits;
      elapsed = SecondsSince(start);
    }
    Rates(state, commits, partitions, elapsed);
  }
  CloseConsumer(c);
}

std::atomic<int64_t> g_async_done{0};
std::atomic<int64_t> g_async_failed{0};

void OnCommit(rd_kafka_t*, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t*, void*) {
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) ++g_async_failed;
  ++g_async_done;
}

void BM_CommitAsync(benchmark::State& state) {
  const int partitions = int(state.range(0));
  if (!Broker().ok()) return state.SkipWithError("the broker did not start");
  rd_kafka_t* c = Committer("async-" + std::to_string(partitions));
  constexpr int64_t kInFlight = 1000;
  for (auto _ : state) {
    g_async_done = 0;
    g_async_failed = 0;
    int64_t sent = 0;
    const auto start = SteadyClock::now();
    double elapsed = 0;
    while (elapsed < kRunSeconds) {
      if (sent - g_async_done < kInFlight) {
        rd_kafka_topic_partition_list_t* list = Offsets(partitions, sent + 1);
        rd_kafka_commit_queue(c, list, nullptr, OnCommit, nullptr);
        rd_kafka_topic_partition_list_destroy(list);
        ++sent;
      }
      rd_kafka_poll(c, 0);
      elapsed = SecondsSince(start);
    }
    while (g_async_done < sent) rd_kafka_poll(c, 10);
    elapsed = SecondsSince(start);
    if (g_async_failed > 0) return state.SkipWithError("an async commit failed");
    Rates(state, sent, partitions, elapsed);
  }
  CloseConsumer(c);
}

std::atomic<int64_t> g_delivered{0};
void OnDelivery(rd_kafka_t*, const rd_kafka_message_t*, void*) {
  ++g_delivered;
}

void BM_ProduceSyncBaseline(benchmark::State& state) {
  if (!Broker().ok()) return state.SkipWithError("the broker did not start");
  EnsureTopic(kTopic, kTopicPartitions);
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  char err[512];
  rd_kafka_conf_set(conf, "bootstrap.servers", Broker().bootstrap().c_str(), err, sizeof(err));
  rd_kafka_conf_set(conf, "acks", "1", err, sizeof(err));
  rd_kafka_conf_set(conf, "linger.ms", "0", err, sizeof(err));
  rd_kafka_conf_set_dr_msg_cb(conf, OnDelivery);
  rd_kafka_t* p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
  const std::string value(100, 'v');
  for (auto _ : state) {
    g_delivered = 0;
    int64_t sent = 0;
    const auto start = SteadyClock::now();
    double elapsed = 0;
    while (elapsed < kRunSeconds) {
      rd_kafka_producev(p, RD_KAFKA_V_TOPIC(kTopic), RD_KAFKA_V_PARTITION(0),
                        RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
      ++sent;
      while (g_delivered < sent) rd_kafka_poll(p, 1);
      elapsed = SecondsSince(start);
    }
    state.counters["round_trips_per_s"] = double(sent) / elapsed;
    state.SetIterationTime(elapsed);
  }
  rd_kafka_destroy(p);
}

void BM_Rebalance(benchmark::State& state) {
  const int members = int(state.range(0));
  if (!Broker().ok()) return state.SkipWithError("the broker did not start");
  static int round = 0;
  const std::string topic = "rebalance-" + std::to_string(members);
  EnsureTopic(topic, kTopicPartitions);
  for (auto _ : state) {
    const std::string group = "rebalance-" + std::to_string(++round);
    std::vector<rd_kafka_t*> consumers;
    const auto start = SteadyClock::now();
    for (int i = 0; i < members; ++i) {
      rd_kafka_t* c =
          Client(RD_KAFKA_CONSUMER, {{"group.id", group}, {"session.timeout.ms", "10000"}});
      rd_kafka_poll_set_consumer(c);
      rd_kafka_topic_partition_list_t* sub = rd_kafka_topic_partition_list_new(1);
      rd_kafka_topic_partition_list_add(sub, topic.c_str(), RD_KAFKA_PARTITION_UA);
      rd_kafka_subscribe(c, sub);
      rd_kafka_topic_partition_list_destroy(sub);
      consumers.push_back(c);
    }
    // Done when every member holds a share and the shares cover the topic
    // (the range assignor splits it without overlap).
    bool all = false;
    while (!all && SecondsSince(start) < 60) {
      all = true;
      int total = 0;
      for (rd_kafka_t* c : consumers) {
        rd_kafka_message_t* m = rd_kafka_consumer_poll(c, 1);
        if (m != nullptr) rd_kafka_message_destroy(m);
        rd_kafka_topic_partition_list_t* assigned = nullptr;
        rd_kafka_assignment(c, &assigned);
        const int count = assigned != nullptr ? assigned->cnt : 0;
        all = all && count > 0;
        total += count;
        if (assigned != nullptr) rd_kafka_topic_partition_list_destroy(assigned);
      }
      all = all && total == kTopicPartitions;
    }
    const double seconds = SecondsSince(start);
    state.SetIterationTime(seconds);
    for (rd_kafka_t* c : consumers) CloseConsumer(c);
    if (!all) return state.SkipWithError("the group did not settle within 60 s");
  }
}

BENCHMARK(BM_ProduceSyncBaseline)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);

// The sync and async commit runs, alike: 1, 10 and 100 partitions per commit.
void CommitRuns(benchmark::internal::Benchmark* b) {
  b->Arg(1)->Arg(10)->Arg(100)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
}
BENCHMARK(BM_CommitSync)->Apply(CommitRuns);
BENCHMARK(BM_CommitAsync)->Apply(CommitRuns);

BENCHMARK(BM_Rebalance)->Arg(10)->Iterations(3)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
