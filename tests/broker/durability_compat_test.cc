// Crash durability against a real client (label compat). `daruma serve` runs
// in fsync mode (log.flush.interval.messages=1, so an acks=-1 produce is
// answered only after its data is fsynced) and takes acks=-1 produces from
// confluent-kafka (librdkafka 2.0.2) driven by /usr/bin/python3. The test
// SIGKILLs the broker once the client has recorded N delivery reports, kills
// the producer too (so nothing is retried into the next incarnation),
// restarts the broker on the same data dir and finally consumes partition 0.
//
// The contract checked, for every acknowledged message (key i, offset o):
//   * the consumed log holds key i at offset o with the produced value;
// and for the whole log: keys are strictly increasing (nothing duplicated or
// reordered; unacknowledged messages may or may not be there) and offsets are
// contiguous. The producer runs with retries=0 and without idempotence, so a
// duplicate could only come from the broker.
//
// Also here: one 100,000-message kcat produce + consume round trip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "common/file_system.h"
#include "daruma_process.h"
#include "support/test_support.h"

namespace daruma::broker {
namespace {

using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;
using daruma::testing::WriteStringToFile;
using testing::ChildProcess;
using testing::DarumaProcess;
using testing::FindOnPath;
using testing::Shell;

constexpr char kPython[] = "/usr/bin/python3";

// produce BOOTSTRAP TOPIC FIRST COUNT ACKED BATCH_BYTES: keys FIRST..,
// partition 0; one "key offset" line per successful delivery report, written
// at once; the first failed delivery is printed.
// consume BOOTSTRAP TOPIC OUT: "key offset ok|bad" per message of partition 0,
// from the beginning to the high watermark read at the start.
constexpr char kClientScript[] = R"PY(
import sys, time
mode, bootstrap, topic = sys.argv[1:4]

def payload(i):
    return b'value-%d-' % i + bytes([97 + i % 26]) * (i % 300)

if mode == 'produce':
    from confluent_kafka import Producer
    first, count, acked_path = int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
    out = open(acked_path, 'w', buffering=1)
    failed = []
    def on_delivery(err, msg):
        if err is None:
            out.write('%s %d\n' % (msg.key().decode(), msg.offset()))
        elif not failed:
            failed.append(err)
            print('first failed delivery: key %s: %s' % (msg.key().decode(), err), flush=True)
    p = Producer({'bootstrap.servers': bootstrap, 'acks': 'all', 'linger.ms': 5,
                  'retries': 0, 'enable.idempotence': False, 'message.timeout.ms': 60000,
                  'queue.buffering.max.messages': 20000, 'batch.size': int(sys.argv[7])})
    for i in range(first, first + count):
        while True:
            try:
                p.produce(topic, key=b'%d' % i, value=payload(i), partition=0,
                          on_delivery=on_delivery)
                break
            except BufferError:
                p.poll(0.05)
        p.poll(0)
    p.flush(60)
else:
    from confluent_kafka import Consumer, KafkaError, TopicPartition, OFFSET_BEGINNING
    out = open(sys.argv[4], 'w')
    c = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'unused',
                  'enable.auto.commit': False, 'enable.partition.eof': False})
    low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=20)
    c.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
    next_offset, deadline = low, time.time() + 40
    while next_offset < high and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            sys.exit('consume error: %s' % m.error())
        i = int(m.key())
        out.write('%d %d %s\n' % (i, m.offset(), 'ok' if m.value() == payload(i) else 'bad'))
        next_offset = m.offset() + 1
    c.close()
    if next_offset < high:
        sys.exit('timed out at offset %d of %d' % (next_offset, high))
)PY";

bool HavePythonClient() {
  return ::access(kPython, X_OK) == 0 &&
         Shell(std::string(kPython) + " -c 'import confluent_kafka' 2>/dev/null") == 0;
}

size_t CountLines(const std::string& path) {
  const std::string text = ReadFileToString(path);
  size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

struct Delivery {
  int64_t key;
  int64_t offset;
};

// The complete "key offset" lines of an acked file (a killed writer may leave
// a partial last line, which is not a delivery report).
std::vector<Delivery> ReadAcked(const std::string& path) {
  std::vector<Delivery> out;
  std::istringstream in(ReadFileToString(path));
  std::string line;
  while (std::getline(in, line)) {
    if (in.eof()) break;  // no trailing newline: cut short by SIGKILL
    std::istringstream fields(line);
    Delivery d{};
    if (fields >> d.key >> d.offset) out.push_back(d);
  }
  return out;
}

class DurabilityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::access(testing::DarumaBinary().c_str(), X_OK) != 0) {
      GTEST_SKIP() << "SKIPPED: " << testing::DarumaBinary() << " not built";
    }
    if (!HavePythonClient()) {
      GTEST_SKIP() << "SKIPPED: " << kPython << " has no confluent_kafka module";
    }
    script_ = dir_.Join("client.py");
    WriteStringToFile(script_, kClientScript);
  }

  // Starts a producer of keys [first, first + count) in batches of at most
  // `batch_bytes`, waits for `kill_after` delivery reports, SIGKILLs the
  // broker, then the producer. Returns the acked deliveries.
  std::vector<Delivery> ProduceAndCrash(DarumaProcess& daruma, int64_t first, int count,
                                        size_t kill_after, int batch_bytes = 1000000) {
    const std::string acked = dir_.Join("acked-" + std::to_string(first));
    ChildProcess producer(
        {kPython, script_, "produce", daruma.bootstrap(), kTopic, std::to_string(first),
         std::to_string(count), acked, std::to_string(batch_bytes)},
        dir_.Join("producer.log"));
    EXPECT_TRUE(producer.started());
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(40);
    while (CountLines(acked) < kill_after && producer.Running() &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    EXPECT_GE(CountLines(acked), kill_after)
        << "producer stalled\n"
        << ReadFileToString(dir_.Join("producer.log")) << daruma.Log();
    EXPECT_TRUE(daruma.Kill());
    // Let the client see the dead connection (failed deliveries), then make
    // sure it never talks to the next incarnation.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    producer.Kill();
    return ReadAcked(acked);
  }

  // Consumes partition 0 and checks every acked delivery and the log's order.
  void VerifyLog(DarumaProcess& daruma, const std::vector<Delivery>& acked) {
    const std::string out = dir_.Join("consumed");
    const std::string cmd = std::string("timeout 60 ") + kPython + " " + script_ + " consume " +
                            daruma.bootstrap() + " " + kTopic + " " + out + " >" +
                            dir_.Join("consumer.log") + " 2>&1";
    ASSERT_EQ(Shell(cmd), 0) << ReadFileToString(dir_.Join("consumer.log")) << daruma.Log();
    std::map<int64_t, int64_t> key_at;  // offset -> key
    std::istringstream in(ReadFileToString(out));
    int64_t key = 0, offset = 0, prev_key = -1, prev_offset = -1;
    std::string verdict;
    while (in >> key >> offset >> verdict) {
      ASSERT_EQ(verdict, "ok") << "value of key " << key << " at offset " << offset;
      ASSERT_GT(key, prev_key) << "duplicate or reordered key at offset " << offset;
      ASSERT_EQ(offset, prev_offset + 1) << "offset gap after " << prev_offset;
      key_at[offset] = key;
      prev_key = key;
      prev_offset = offset;
    }
    // For the log: how many unacknowledged messages survived the crashes.
    std::cerr << "[ durability ] " << acked.size() << " acknowledged, " << key_at.size()
              << " in the log\n";
    for (const Delivery& d : acked) {
      auto it = key_at.find(d.offset);
      ASSERT_NE(it, key_at.end()) << "acked key " << d.key << " at offset " << d.offset
                                  << " lost (log ends at " << prev_offset << ")";
      ASSERT_EQ(it->second, d.key) << "offset " << d.offset << " acked for another key";
    }
  }

  static constexpr char kTopic[] = "durable";
  TempDir dir_;
  std::string script_;
};

// Three crashes on one data dir, each recovered state extended by the next
// producer: after ~500, ~5,000 and ~20,000 acknowledged messages.
TEST_F(DurabilityTest, KillNineLosesNoAcknowledgedMessage) {
  DarumaProcess daruma(dir_.path(),
                       "log.flush.interval.messages=1\ndaruma.crash.loop.max.unclean.starts=0\n");
  std::vector<Delivery> acked;
  const std::vector<size_t> kill_points = {500, 5000, 20000};
  for (size_t round = 0; round < kill_points.size(); ++round) {
    ASSERT_TRUE(daruma.Start());
    ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
    const int64_t first = int64_t(round + 1) * 1000000;
    auto got = ProduceAndCrash(daruma, first, int(kill_points[round] * 2), kill_points[round]);
    ASSERT_GE(got.size(), kill_points[round]);
    acked.insert(acked.end(), got.begin(), got.end());
  }
  ASSERT_TRUE(daruma.Start());
  ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
  VerifyLog(daruma, acked);
  EXPECT_EQ(daruma.Stop(), 0) << daruma.Log();
}

// 16 KiB segments roll every few dozen messages, so the kills land among
// rolls (new segment files, index trimming, the recovery-point checkpoint of
// the rolled segment). Batches stay under 8 KiB: a batch larger than
// segment.bytes is refused (RECORD_LIST_TOO_LARGE), as by Kafka.
TEST_F(DurabilityTest, KillNineAmongSegmentRollsLosesNoAcknowledgedMessage) {
  DarumaProcess daruma(dir_.path(),
                       "log.flush.interval.messages=1\nlog.segment.bytes=16384\n"
                       "daruma.crash.loop.max.unclean.starts=0\n");
  std::vector<Delivery> acked;
  for (int round = 0; round < 2; ++round) {
    ASSERT_TRUE(daruma.Start());
    ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
    auto got = ProduceAndCrash(daruma, int64_t(round + 1) * 1000000, 6000, 3000, 8192);
    ASSERT_GE(got.size(), 3000u);
    acked.insert(acked.end(), got.begin(), got.end());
  }
  ASSERT_TRUE(daruma.Start());
  ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
  VerifyLog(daruma, acked);
  EXPECT_EQ(daruma.Stop(), 0) << daruma.Log();
  auto listed = FileSystem::Default()->ListDir(daruma.data_dir() + "/" + kTopic + "-0");
  ASSERT_TRUE(listed.ok());
  size_t segments = 0;
  for (const DirEntry& e : *listed) segments += e.name.ends_with(".log");
  EXPECT_GT(segments, 20u) << "segments did not roll";
}

// 100,000 messages through kcat, consumed back byte-identical and in order.
TEST(RoundTripTest, HundredThousandMessagesThroughKcat) {
  if (::access(testing::DarumaBinary().c_str(), X_OK) != 0) GTEST_SKIP() << "no daruma binary";
  const std::string kcat = FindOnPath("kcat");
  if (kcat.empty()) GTEST_SKIP() << "SKIPPED: kcat not installed";
  TempDir dir;
  DarumaProcess daruma(dir.path(), "");
  ASSERT_TRUE(daruma.Start());
  ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
  std::string want;
  for (int i = 0; i < 100000; ++i) {
    want +=
        "msg-" + std::to_string(i) + "-" + std::string(size_t(i % 150), char('A' + i % 26)) + "\n";
  }
  WriteStringToFile(dir.Join("in"), want);
  const std::string produce = "timeout 60 " + kcat + " -P -b " + daruma.bootstrap() +
                              " -t big -p 0 -X linger.ms=5 -l " + dir.Join("in") + " 2>" +
                              dir.Join("err");
  ASSERT_EQ(Shell(produce), 0) << ReadFileToString(dir.Join("err")) << daruma.Log();
  const std::string consume = "timeout 60 " + kcat + " -C -b " + daruma.bootstrap() +
                              " -t big -p 0 -o beginning -e -f '%s\\n' >" + dir.Join("out") +
                              " 2>" + dir.Join("err");
  ASSERT_EQ(Shell(consume), 0) << ReadFileToString(dir.Join("err")) << daruma.Log();
  const std::string got = ReadFileToString(dir.Join("out"));
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want) << "consumed messages differ from the produced ones";
  EXPECT_EQ(daruma.Stop(), 0) << daruma.Log();
}

}  // namespace
}  // namespace daruma::broker
