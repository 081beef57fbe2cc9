// Real clients against a spawned `daruma serve` (label compat): kcat
// (librdkafka 2.0.2) per codec on a 3-partition topic, and the two Python
// clients with manual partition assignment (no consumer groups). Every
// partition must come back byte-identical and in order. The broker must then
// stop on SIGTERM with exit code 0 and leave the clean-shutdown marker.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "daruma_process.h"
#include "support/test_support.h"

namespace daruma::broker {
namespace {

using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;
using daruma::testing::WriteStringToFile;
using testing::DarumaProcess;
using testing::FindOnPath;

constexpr int kMessages = 10000;
constexpr int kPartitions = 3;

// Runs a shell command; its exit status.
int Shell(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

#define DARUMA_REQUIRE_BROKER_BINARY()                                   \
  do {                                                                   \
    if (::access(testing::DarumaBinary().c_str(), X_OK) != 0) {          \
      GTEST_SKIP() << "SKIPPED: " << testing::DarumaBinary()             \
                   << " not built (ninja daruma in the same build dir)"; \
    }                                                                    \
  } while (0)

class KcatCompatTest : public ::testing::TestWithParam<const char*> {};

// Lines of partition p: distinct, of varying length, mentioning the codec.
std::string PartitionPayload(const std::string& codec, int p) {
  std::string out;
  for (int i = p; i < kMessages; i += kPartitions) {
    out += "m" + std::to_string(i) + "-" + codec + "-p" + std::to_string(p) + "-" +
           std::string(size_t(i % 97), char('a' + i % 26)) + "\n";
  }
  return out;
}

TEST_P(KcatCompatTest, ProduceThenConsumeEveryPartitionByteIdentical) {
  DARUMA_REQUIRE_BROKER_BINARY();
  const std::string kcat = FindOnPath("kcat");
  if (kcat.empty()) GTEST_SKIP() << "SKIPPED: kcat not installed (apt-get install kcat)";
  const std::string codec = GetParam();
  TempDir dir;
  DarumaProcess daruma(dir.path(), "num.partitions=3\n");
  ASSERT_TRUE(daruma.Start());
  ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
  const std::string topic = "kcat-" + codec;
  for (int p = 0; p < kPartitions; ++p) {
    const std::string in = dir.Join("in-" + std::to_string(p));
    WriteStringToFile(in, PartitionPayload(codec, p));
    const std::string cmd = "timeout 60 " + kcat + " -P -b " + daruma.bootstrap() + " -t " + topic +
                            " -p " + std::to_string(p) + " -z " + codec + " -X linger.ms=5 -l " +
                            in + " 2>" + dir.Join("produce.err");
    ASSERT_EQ(Shell(cmd), 0) << cmd << "\n"
                             << ReadFileToString(dir.Join("produce.err")) << daruma.Log();
  }
  for (int p = 0; p < kPartitions; ++p) {
    const std::string out = dir.Join("out-" + std::to_string(p));
    const std::string cmd = "timeout 60 " + kcat + " -C -b " + daruma.bootstrap() + " -t " + topic +
                            " -p " + std::to_string(p) + " -o beginning -e -f '%s\\n' > " + out +
                            " 2>" + dir.Join("consume.err");
    ASSERT_EQ(Shell(cmd), 0) << cmd << "\n"
                             << ReadFileToString(dir.Join("consume.err")) << daruma.Log();
    const std::string got = ReadFileToString(out);
    const std::string want = PartitionPayload(codec, p);
    EXPECT_EQ(got.size(), want.size()) << "partition " << p;
    EXPECT_TRUE(got == want) << "partition " << p << " differs";
  }
  EXPECT_EQ(daruma.Stop(), 0) << daruma.Log();
  EXPECT_TRUE(FileSystem::Default()->Exists(daruma.data_dir() + "/.kafka_cleanshutdown"));
  // Batches were stored with the codec kcat used (librdkafka silently sends
  // uncompressed batches when the broker's ApiVersions discourages it, and
  // also any batch that the codec would not make smaller, so which batches
  // are compressed depends on timing): attributes are the int16 at byte 21
  // of a v2 batch, codec in bits 0-2, and the size field is at byte 8.
  const std::string segment =
      ReadFileToString(daruma.data_dir() + "/" + topic + "-0/00000000000000000000.log");
  const std::vector<std::string> names = {"none", "gzip", "snappy", "lz4", "zstd"};
  std::set<std::string> codecs_seen;
  for (size_t pos = 0; pos + 23 <= segment.size();) {
    const auto* b = reinterpret_cast<const uint8_t*>(segment.data() + pos);
    const size_t size = size_t(b[8]) << 24 | size_t(b[9]) << 16 | size_t(b[10]) << 8 | b[11];
    const size_t codec_id = b[22] & 0x7;
    ASSERT_LT(codec_id, names.size()) << "batch at position " << pos;
    codecs_seen.insert(names[codec_id]);
    pos += 12 + size;
  }
  EXPECT_TRUE(codecs_seen.count(codec) == 1) << "no batch of partition 0 uses " << codec;
  EXPECT_LE(codecs_seen.size(), codec == "none" ? 1u : 2u);
}

INSTANTIATE_TEST_SUITE_P(Codecs, KcatCompatTest,
                         ::testing::Values("none", "gzip", "snappy", "lz4", "zstd"),
                         [](const auto& info) { return std::string(info.param); });

// kafka-python and confluent-kafka: produce N keyed messages to partition 1,
// consume them back with assign() from the beginning, compare in order.
constexpr char kPythonRoundTrip[] = R"PY(
import sys
bootstrap, client, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
topic = 'py-' + client
want = [(b'k%d' % i, b'value-%d-' % i + b'x' * (i % 50)) for i in range(n)]
if client == 'kafka-python':
    from kafka import KafkaProducer, KafkaConsumer, TopicPartition
    p = KafkaProducer(bootstrap_servers=bootstrap, acks='all')
    for k, v in want:
        p.send(topic, key=k, value=v, partition=1)
    p.flush(30)
    p.close()
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                      consumer_timeout_ms=10000)
    tp = TopicPartition(topic, 1)
    c.assign([tp])
    c.seek_to_beginning(tp)
    got = [(m.key, m.value) for _, m in zip(range(n), c)]
    c.close()
else:
    from confluent_kafka import Producer, Consumer, TopicPartition, OFFSET_BEGINNING
    p = Producer({'bootstrap.servers': bootstrap, 'acks': 'all'})
    for k, v in want:
        while True:
            try:
                p.produce(topic, key=k, value=v, partition=1)
                break
            except BufferError:
                p.poll(0.1)
    if p.flush(30) != 0:
        sys.exit('unflushed messages')
    c = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'unused',
                  'enable.auto.commit': False, 'enable.partition.eof': False})
    c.assign([TopicPartition(topic, 1, OFFSET_BEGINNING)])
    got = []
    import time
    deadline = time.time() + 20
    while len(got) < n and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            sys.exit('consume error: %s' % m.error())
        got.append((m.key(), m.value()))
    c.close()
if got != want:
    sys.exit('mismatch: got %d messages, first difference at %s' % (len(got),
             next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), len(got))))
print('ok', len(got))
)PY";

class PythonCompatTest : public ::testing::TestWithParam<const char*> {};

TEST_P(PythonCompatTest, ProduceThenAssignAndConsume) {
  DARUMA_REQUIRE_BROKER_BINARY();
  const std::string client = GetParam();
  const std::string module = client == std::string("kafka-python") ? "kafka" : "confluent_kafka";
  if (Shell("/usr/bin/python3 -c 'import " + module + "' 2>/dev/null") != 0) {
    GTEST_SKIP() << "SKIPPED: /usr/bin/python3 has no " << module << " module";
  }
  TempDir dir;
  DarumaProcess daruma(dir.path(), "num.partitions=3\n");
  ASSERT_TRUE(daruma.Start());
  ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
  const std::string script = dir.Join("round_trip.py");
  WriteStringToFile(script, kPythonRoundTrip);
  const std::string cmd = "timeout 60 /usr/bin/python3 " + script + " " + daruma.bootstrap() + " " +
                          client + " 10000 >" + dir.Join("py.out") + " 2>&1";
  EXPECT_EQ(Shell(cmd), 0) << ReadFileToString(dir.Join("py.out")) << daruma.Log();
  EXPECT_EQ(ReadFileToString(dir.Join("py.out")).substr(0, 8), "ok 10000");
  EXPECT_EQ(daruma.Stop(), 0) << daruma.Log();
}

INSTANTIATE_TEST_SUITE_P(Clients, PythonCompatTest,
                         ::testing::Values("kafka-python", "confluent-kafka"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

}  // namespace
}  // namespace daruma::broker
