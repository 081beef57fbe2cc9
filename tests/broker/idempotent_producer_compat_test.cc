// Idempotent producers against `daruma serve` with real clients (issue 20,
// label compat): confluent-kafka (librdkafka) with enable.idempotence=true,
// Kafka's Java default since 3.0, produces to three partitions with acks=all;
// the broker is killed (SIGKILL) and restarted, a second producer goes on, and
// kcat then reads back every message exactly once. Retries are forced by
// pausing the broker with requests in flight: each message is still written
// once, in order. kcat's own idempotent producer does the same on one
// partition.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "daruma_process.h"
#include "support/test_support.h"

namespace daruma::broker {
namespace {

using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;
using daruma::testing::WriteStringToFile;
using testing::DarumaProcess;
using testing::FindOnPath;
using testing::Shell;

// produce.py BOOTSTRAP TOPIC FIRST COUNT: values m<FIRST>..m<FIRST+COUNT-1>,
// value i to partition i % 3; "ok" when every one was acknowledged.
constexpr char kProduceScript[] = R"PY(
import sys
from confluent_kafka import Producer
bootstrap, topic, first, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
errors = []
def delivered(err, msg):
    if err is not None:
        errors.append(str(err))
p = Producer({'bootstrap.servers': bootstrap, 'enable.idempotence': True, 'acks': 'all',
              'linger.ms': 5, 'message.timeout.ms': 30000})
for i in range(first, first + count):
    p.produce(topic, value=('m%06d' % i).encode(), partition=i % 3, on_delivery=delivered)
    p.poll(0)
left = p.flush(30)
if left or errors:
    sys.exit('FAILED: %d undelivered, errors %r' % (left, errors[:5]))
print('ok')
)PY";

// paused.py BOOTSTRAP TOPIC COUNT BROKER_PID: the first half of the values is
// acknowledged; the broker is then stopped (SIGSTOP) while the second half is
// in flight, for four times librdkafka's socket.timeout.ms, so the client
// times its requests out ("MsgPossiblyPersisted"), reconnects and retries them
// while the originals still wait in the broker's sockets; then resumed. "ok"
// when every value was acknowledged.
constexpr char kPausedScript[] = R"PY(
import os, signal, sys, time
from confluent_kafka import Producer
bootstrap, topic, count, broker = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
errors = []
def delivered(err, msg):
    if err is not None:
        errors.append(str(err))
p = Producer({'bootstrap.servers': bootstrap, 'enable.idempotence': True, 'acks': 'all',
              'linger.ms': 5, 'socket.timeout.ms': 1000, 'retry.backoff.ms': 100,
              'message.timeout.ms': 60000})
def send(first, last):
    for i in range(first, last):
        p.produce(topic, value=('m%06d' % i).encode(), partition=i % 3, on_delivery=delivered)
        p.poll(0)
send(0, count // 2)
if p.flush(30):
    sys.exit('FAILED: first half not acknowledged')
os.kill(broker, signal.SIGSTOP)
try:
    send(count // 2, count)
    deadline = time.time() + 4
    while time.time() < deadline:
        p.poll(0.1)
finally:
    os.kill(broker, signal.SIGCONT)
left = p.flush(60)
if left or errors:
    sys.exit('FAILED: %d undelivered, errors %r' % (left, errors[:5]))
print('ok')
)PY";

std::string MissingTools() {
  if (::access(testing::DarumaBinary().c_str(), X_OK) != 0) {
    return testing::DarumaBinary() + " not built";
  }
  if (FindOnPath("kcat").empty()) return "kcat not installed (apt-get install kcat)";
  if (Shell("/usr/bin/python3 -c 'import confluent_kafka' 2>/dev/null") != 0) {
    return "/usr/bin/python3 has no confluent_kafka module";
  }
  return "";
}

// Each partition's values in offset order, read with kcat ("<partition> <value>"
// lines, which kcat prints per partition in offset order).
std::map<int, std::vector<std::string>> ConsumeByPartition(const DarumaProcess& daruma,
                                                           const TempDir& dir,
                                                           const std::string& topic) {
  const std::string out = dir.Join("by-partition.txt");
  const std::string cmd = "timeout 60 kcat -C -q -b " + daruma.bootstrap() + " -t " + topic +
                          " -e -o beginning -f '%p %s\\n' >" + out + " 2>" + dir.Join("kcat.err");
  EXPECT_EQ(Shell(cmd), 0) << ReadFileToString(dir.Join("kcat.err"));
  std::map<int, std::vector<std::string>> values;
  std::istringstream in(ReadFileToString(out));
  int partition = 0;
  for (std::string value; in >> partition >> value;) values[partition].push_back(value);
  return values;
}

// Every value of `topic`, read with kcat from the beginning to the end, sorted.
std::vector<std::string> ConsumeAll(const DarumaProcess& daruma, const TempDir& dir,
                                    const std::string& topic) {
  std::vector<std::string> values;
  for (const auto& [partition, in_partition] : ConsumeByPartition(daruma, dir, topic)) {
    values.insert(values.end(), in_partition.begin(), in_partition.end());
  }
  std::sort(values.begin(), values.end());
  return values;
}

std::vector<std::string> Expected(int count) {
  std::vector<std::string> values;
  for (int i = 0; i < count; ++i) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "m%06d", i);
    values.push_back(buf);
  }
  return values;
}

TEST(IdempotentProducerCompat, ConfluentKafkaProducesExactlyOnceAcrossABrokerCrash) {
  if (const std::string missing = MissingTools(); !missing.empty()) {
    GTEST_SKIP() << "SKIPPED: " << missing;
  }
  TempDir dir;
  DarumaProcess daruma(dir.path(), "num.partitions=3\n");
  ASSERT_TRUE(daruma.Start());
  ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
  const std::string script = dir.Join("produce.py");
  WriteStringToFile(script, kProduceScript);
  auto produce = [&](int first, int count) {
    const std::string out = dir.Join("py.out");
    const std::string cmd = "timeout 90 /usr/bin/python3 " + script + " " + daruma.bootstrap() +
                            " idem " + std::to_string(first) + " " + std::to_string(count) + " >" +
                            out + " 2>&1";
    EXPECT_EQ(Shell(cmd), 0) << ReadFileToString(out) << daruma.Log();
    EXPECT_EQ(ReadFileToString(out), "ok\n");
  };
  produce(0, 1500);
  // A crash: the producer ids handed out so far must never come back.
  ASSERT_TRUE(daruma.Kill());
  ASSERT_TRUE(daruma.Start());
  ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
  produce(1500, 1500);
  EXPECT_EQ(ConsumeAll(daruma, dir, "idem"), Expected(3000));
  EXPECT_EQ(daruma.Stop(), 0) << daruma.Log();
}

TEST(IdempotentProducerCompat, RetriesOfRequestsTheBrokerStillHoldsAreWrittenOnceInOrder) {
  if (const std::string missing = MissingTools(); !missing.empty()) {
    GTEST_SKIP() << "SKIPPED: " << missing;
  }
  TempDir dir;
  DarumaProcess daruma(dir.path(), "num.partitions=3\n");
  ASSERT_TRUE(daruma.Start());
  ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
  const std::string script = dir.Join("paused.py");
  WriteStringToFile(script, kPausedScript);
  const std::string out = dir.Join("py.out");
  constexpr int kCount = 3000;
  const std::string cmd = "timeout 120 /usr/bin/python3 " + script + " " + daruma.bootstrap() +
                          " paused " + std::to_string(kCount) + " " + std::to_string(daruma.pid()) +
                          " >" + out + " 2>&1";
  ASSERT_EQ(Shell(cmd), 0) << ReadFileToString(out) << daruma.Log();
  const std::map<int, std::vector<std::string>> got = ConsumeByPartition(daruma, dir, "paused");
  // Exactly once, and in each partition in the order produced.
  std::vector<std::string> all;
  for (const auto& [partition, values] : got) {
    EXPECT_TRUE(std::is_sorted(values.begin(), values.end())) << "partition " << partition;
    all.insert(all.end(), values.begin(), values.end());
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, Expected(kCount));
  EXPECT_EQ(daruma.Stop(), 0) << daruma.Log();
}

TEST(IdempotentProducerCompat, KcatIdempotentProducer) {
  if (const std::string missing = MissingTools(); !missing.empty()) {
    GTEST_SKIP() << "SKIPPED: " << missing;
  }
  TempDir dir;
  DarumaProcess daruma(dir.path(), "");
  ASSERT_TRUE(daruma.Start());
  ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
  std::string input;
  for (const std::string& v : Expected(500)) input += v + "\n";
  WriteStringToFile(dir.Join("in.txt"), input);
  // From stdin, one message per line (a file argument is sent as one message).
  const std::string cmd = "timeout 60 kcat -P -b " + daruma.bootstrap() +
                          " -t kidem -p 0 -X enable.idempotence=true -X acks=all <" +
                          dir.Join("in.txt") + " 2>" + dir.Join("kcat-p.err");
  ASSERT_EQ(Shell(cmd), 0) << ReadFileToString(dir.Join("kcat-p.err")) << daruma.Log();
  EXPECT_EQ(ConsumeAll(daruma, dir, "kidem"), Expected(500));
  EXPECT_EQ(daruma.Stop(), 0) << daruma.Log();
}

}  // namespace
}  // namespace daruma::broker
