// Real clients against a spawned `daruma serve` (label compat): kcat
// (librdkafka 2.0.2) with 100,000 messages per codec on a 3-partition topic
// (one broker for all codecs), and the two Python clients with manual
// partition assignment (no consumer groups). Every partition must come back
// byte-identical and in order. The broker must then stop on SIGTERM with exit
// code 0 and leave the clean-shutdown marker.
#include <gtest/gtest.h>

#include <algorithm>
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
using testing::Shell;

constexpr int kMessages = 100000;  // per codec, over kPartitions (the issue's proof)
constexpr int kPartitions = 3;

#define DARUMA_REQUIRE_BROKER_BINARY()                                   \
  do {                                                                   \
    if (::access(testing::DarumaBinary().c_str(), X_OK) != 0) {          \
      GTEST_SKIP() << "SKIPPED: " << testing::DarumaBinary()             \
                   << " not built (ninja daruma in the same build dir)"; \
    }                                                                    \
  } while (0)

// Lines of partition p: distinct, 60–140 bytes (about 100 on average),
// mentioning the codec, with a compressible tail.
std::vector<std::string> PartitionMessages(const std::string& codec, int p) {
  std::vector<std::string> out;
  for (int i = p; i < kMessages; i += kPartitions) {
    std::string m = "m" + std::to_string(i) + "-" + codec + "-p" + std::to_string(p) + "-";
    m.append(size_t(60 + i % 81) - std::min<size_t>(m.size(), 60), char('a' + i % 26));
    out.push_back(std::move(m));
  }
  return out;
}

// Runs `commands` concurrently from a bash script at `script`: 0 when every
// one exited 0.
int RunConcurrently(const std::vector<std::string>& commands, const std::string& script) {
  std::string text = "rc=0\n";
  for (const auto& c : commands) text += c + " &\n";
  text += "for j in $(jobs -p); do wait $j || rc=1; done\nexit $rc\n";
  WriteStringToFile(script, text);
  return Shell("bash " + script);
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

// One consumed message: kcat -f '%o %T %s\n'.
struct Consumed {
  int64_t offset = -1;
  int64_t timestamp = -1;
  std::string value;
};

std::vector<Consumed> ParseConsumed(const std::string& text) {
  std::vector<Consumed> out;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string::npos) eol = text.size();
    const std::string line = text.substr(pos, eol - pos);
    pos = eol + 1;
    const size_t a = line.find(' ');
    const size_t b = a == std::string::npos ? a : line.find(' ', a + 1);
    if (b == std::string::npos) {
      out.push_back({-1, -1, line});
      continue;
    }
    out.push_back({std::stoll(line.substr(0, a)), std::stoll(line.substr(a + 1, b - a - 1)),
                   line.substr(b + 1)});
  }
  return out;
}

// One broker for every codec (start-up is most of a small test's time).
class KcatCompatTest : public ::testing::TestWithParam<const char*> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    daruma_ = new DarumaProcess(dir_->path(), "num.partitions=3\n");
    serving_ = daruma_->Start() && daruma_->WaitServing();
  }
  // The broker must stop on SIGTERM with exit code 0 and leave the
  // clean-shutdown marker after serving every codec.
  static void TearDownTestSuite() {
    if (serving_) {
      EXPECT_EQ(daruma_->Stop(), 0) << daruma_->Log();
      EXPECT_TRUE(FileSystem::Default()->Exists(daruma_->data_dir() + "/.kafka_cleanshutdown"));
    }
    delete daruma_;
    delete dir_;
  }

  // kcat -Q (ListOffsets) for one partition and timestamp (-2 earliest,
  // -1 latest); -2 when the answer does not parse.
  static int64_t QueryOffset(const std::string& kcat, const std::string& topic, int p,
                             int64_t timestamp) {
    const std::string out = dir_->Join("query.out");
    const std::string cmd = "timeout 30 " + kcat + " -Q -b " + daruma_->bootstrap() + " -t " +
                            topic + ":" + std::to_string(p) + ":" + std::to_string(timestamp) +
                            " > " + out + " 2>&1";
    if (Shell(cmd) != 0) return -2;
    const std::string text = ReadFileToString(out);
    const size_t at = text.find("offset ");
    return at == std::string::npos ? -2 : std::stoll(text.substr(at + 7));
  }

  static TempDir* dir_;
  static DarumaProcess* daruma_;
  static bool serving_;
};

TempDir* KcatCompatTest::dir_ = nullptr;
DarumaProcess* KcatCompatTest::daruma_ = nullptr;
bool KcatCompatTest::serving_ = false;

// Codec ids of the v2 batches of one partition's first segment: attributes
// are the int16 at byte 21 (codec in bits 0-2), the size field at byte 8.
std::set<std::string> CodecsInSegment(const std::string& segment) {
  const std::vector<std::string> names = {"none", "gzip", "snappy", "lz4", "zstd"};
  std::set<std::string> seen;
  for (size_t pos = 0; pos + 23 <= segment.size();) {
    const auto* b = reinterpret_cast<const uint8_t*>(segment.data() + pos);
    const size_t size = size_t(b[8]) << 24 | size_t(b[9]) << 16 | size_t(b[10]) << 8 | b[11];
    const size_t codec_id = b[22] & 0x7;
    seen.insert(codec_id < names.size() ? names[codec_id] : "codec " + std::to_string(codec_id));
    pos += 12 + size;
  }
  return seen;
}

// The issue's proof: 100,000 messages per codec to a 3-partition topic, the
// three partitions produced and consumed concurrently; every partition comes
// back byte-identical, in order, at offsets 0..n-1, and ListOffsets
// earliest/latest/by-timestamp agree with what was consumed.
TEST_P(KcatCompatTest, ProduceThenConsumeEveryPartitionByteIdentical) {
  DARUMA_REQUIRE_BROKER_BINARY();
  const std::string kcat = FindOnPath("kcat");
  if (kcat.empty()) GTEST_SKIP() << "SKIPPED: kcat not installed (apt-get install kcat)";
  ASSERT_TRUE(serving_) << daruma_->Log();
  const std::string codec = GetParam();
  const std::string topic = "kcat-" + codec;
  const std::string bootstrap = daruma_->bootstrap();
  std::vector<std::string> produce;
  std::vector<std::string> consume;
  for (int p = 0; p < kPartitions; ++p) {
    const std::string n = codec + "-" + std::to_string(p);
    WriteStringToFile(dir_->Join("in-" + n), Join(PartitionMessages(codec, p)));
    produce.push_back("timeout 60 " + kcat + " -P -b " + bootstrap + " -t " + topic + " -p " +
                      std::to_string(p) + " -z " + codec + " -X linger.ms=5 -l " +
                      dir_->Join("in-" + n) + " 2>" + dir_->Join("produce.err-" + n));
    consume.push_back("timeout 60 " + kcat + " -C -b " + bootstrap + " -t " + topic + " -p " +
                      std::to_string(p) + " -o beginning -e -f '%o %T %s\\n' > " +
                      dir_->Join("out-" + n) + " 2>" + dir_->Join("consume.err-" + n));
  }
  ASSERT_EQ(RunConcurrently(produce, dir_->Join("produce-" + codec + ".sh")), 0)
      << ReadFileToString(dir_->Join("produce.err-" + codec + "-0")) << daruma_->Log();
  ASSERT_EQ(RunConcurrently(consume, dir_->Join("consume-" + codec + ".sh")), 0)
      << ReadFileToString(dir_->Join("consume.err-" + codec + "-0")) << daruma_->Log();
  for (int p = 0; p < kPartitions; ++p) {
    const std::vector<std::string> want = PartitionMessages(codec, p);
    const std::vector<Consumed> got =
        ParseConsumed(ReadFileToString(dir_->Join("out-" + codec + "-" + std::to_string(p))));
    ASSERT_EQ(got.size(), want.size()) << "partition " << p;
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(got[i].offset, int64_t(i)) << "partition " << p << " message " << i;
      ASSERT_EQ(got[i].value, want[i]) << "partition " << p << " offset " << i;
    }
    EXPECT_EQ(QueryOffset(kcat, topic, p, -2), 0) << "earliest, partition " << p;
    EXPECT_EQ(QueryOffset(kcat, topic, p, -1), int64_t(want.size())) << "latest, partition " << p;
    // By timestamp: the first offset whose timestamp is >= that of the
    // middle message, and -1 past the newest timestamp.
    const int64_t ts = got[got.size() / 2].timestamp;
    int64_t first = -1;
    int64_t newest = -1;
    for (const Consumed& c : got) {
      if (first < 0 && c.timestamp >= ts) first = c.offset;
      newest = std::max(newest, c.timestamp);
    }
    EXPECT_EQ(QueryOffset(kcat, topic, p, ts), first) << "timestamp " << ts << ", partition " << p;
    EXPECT_EQ(QueryOffset(kcat, topic, p, newest + 1), -1) << "partition " << p;
  }
  // Batches were stored with the codec kcat used (librdkafka silently sends
  // uncompressed batches when the broker's ApiVersions discourages it, and
  // also any batch that the codec would not make smaller, so which batches
  // are compressed depends on timing).
  const std::set<std::string> codecs = CodecsInSegment(
      ReadFileToString(daruma_->data_dir() + "/" + topic + "-0/00000000000000000000.log"));
  EXPECT_EQ(codecs.count(codec), 1u) << "no batch of partition 0 uses " << codec;
  EXPECT_LE(codecs.size(), codec == "none" ? 1u : 2u);
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
