// Transactional producers against `daruma serve` with a real client (issue
// 20, label compat): confluent-kafka (librdkafka) commits and aborts
// transactions over three partitions, a read_committed consumer sees exactly
// the committed messages and a read_uncommitted one every message; a second
// producer with the same transactional id fences the first; a
// consume-transform-produce loop commits its consumed offsets inside the
// transaction (send_offsets_to_transaction); and a transaction left open by a
// producer that died, followed by a broker crash (SIGKILL), is aborted after
// the restart once its timeout passes, so read_committed readers reach the
// end again.
#include <gtest/gtest.h>
#include <unistd.h>

#include <map>
#include <sstream>
#include <string>

#include "daruma_process.h"
#include "support/test_support.h"

namespace daruma::broker {
namespace {

using daruma::testing::ReadFileToString;
using daruma::testing::TempDir;
using daruma::testing::WriteStringToFile;
using testing::DarumaProcess;
using testing::Shell;

// txn.py BOOTSTRAP MODE: runs one scenario and prints "key=value" lines.
constexpr char kScript[] = R"PY(
import os, sys, time
from confluent_kafka import Producer, Consumer, KafkaException, TopicPartition
bootstrap, mode = sys.argv[1], sys.argv[2]

def producer(tid, **extra):
    conf = {'bootstrap.servers': bootstrap, 'transactional.id': tid, 'linger.ms': 5}
    conf.update(extra)
    p = Producer(conf)
    p.init_transactions(30)
    return p

def send(p, topic, values):
    for i, v in enumerate(values):
        p.produce(topic, value=v.encode(), partition=i % 3)
    p.flush(30)

def read(topic, isolation, group=None):
    # Every value up to the end each partition shows this reader (the last
    # stable offset for read_committed), or what arrived within 30 s.
    c = Consumer({'bootstrap.servers': bootstrap, 'group.id': group or ('r-' + isolation),
                  'isolation.level': isolation, 'auto.offset.reset': 'earliest',
                  'enable.auto.commit': False, 'enable.partition.eof': True})
    c.assign([TopicPartition(topic, p, 0) for p in range(3)])
    values, eof, deadline = [], set(), time.time() + 30
    while len(eof) < 3 and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                eof.add(m.partition())
            continue
        values.append(m.value().decode())
    c.close()
    return sorted(values), len(eof) == 3

if mode == 'commit_abort':
    p = producer('t-commit')
    p.begin_transaction(); send(p, 'txn', ['c%03d' % i for i in range(100)]); p.commit_transaction(30)
    p.begin_transaction(); send(p, 'txn', ['a%03d' % i for i in range(50)]); p.abort_transaction(30)
    p.begin_transaction(); send(p, 'txn', ['c%03d' % i for i in range(100, 150)]); p.commit_transaction(30)
    committed, at_end = read('txn', 'read_committed')
    print('committed_count=%d' % len(committed))
    print('committed_exact=%s' % (committed == ['c%03d' % i for i in range(150)]))
    print('committed_reached_end=%s' % at_end)
    everything, _ = read('txn', 'read_uncommitted')
    print('uncommitted_count=%d' % len(everything))
elif mode == 'fence':
    old = producer('t-fence')
    old.begin_transaction(); send(old, 'fenced', ['old%d' % i for i in range(10)])
    new = producer('t-fence')
    new.begin_transaction(); send(new, 'fenced', ['new%d' % i for i in range(10)]); new.commit_transaction(30)
    try:
        old.produce('fenced', value=b'late', partition=0)
        old.commit_transaction(10)
        print('old_commit=succeeded')
    except KafkaException as e:
        err = e.args[0]
        print('old_commit=failed fatal=%s name=%s' % (err.fatal(), err.name()))
    committed, at_end = read('fenced', 'read_committed')
    print('committed=%s' % ','.join(committed))
    print('committed_reached_end=%s' % at_end)
elif mode == 'ctp':
    plain = Producer({'bootstrap.servers': bootstrap})
    for i in range(60):
        plain.produce('input', value=('in%03d' % i).encode(), partition=i % 3)
    plain.flush(30)
    c = Consumer({'bootstrap.servers': bootstrap, 'group.id': 'ctp', 'auto.offset.reset': 'earliest',
                  'enable.auto.commit': False, 'isolation.level': 'read_committed'})
    c.subscribe(['input'])
    p = producer('t-ctp')
    got, deadline = 0, time.time() + 60
    while got < 60 and time.time() < deadline:
        msgs = c.consume(20, 1.0)
        msgs = [m for m in msgs if not m.error()]
        if not msgs:
            continue
        p.begin_transaction()
        for m in msgs:
            p.produce('output', value=m.value().replace(b'in', b'out'), partition=m.partition())
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 30)
        p.commit_transaction(30)
        got += len(msgs)
    committed = c.committed([TopicPartition('input', i) for i in range(3)], 10)
    print('consumed=%d' % got)
    print('committed_offsets=%s' % ','.join(str(tp.offset) for tp in committed))
    c.close()
    out, _ = read('output', 'read_committed')
    print('output_exact=%s' % (out == ['out%03d' % i for i in range(60)]))
elif mode == 'dangling':
    p = producer('t-dangling', **{'transaction.timeout.ms': 3000})
    p.begin_transaction(); send(p, 'dangling', ['d%d' % i for i in range(30)])
    print('left_open=true')
    sys.stdout.flush()
    os._exit(0)  # the producer dies with its transaction open
elif mode == 'after_restart':
    committed, at_end = read('dangling', 'read_committed')
    print('committed_count=%d' % len(committed))
    print('committed_reached_end=%s' % at_end)
)PY";

std::string MissingTxnTools() {
  if (::access(testing::DarumaBinary().c_str(), X_OK) != 0) {
    return testing::DarumaBinary() + " not built";
  }
  if (Shell("/usr/bin/python3 -c 'import confluent_kafka' 2>/dev/null") != 0) {
    return "/usr/bin/python3 has no confluent_kafka module";
  }
  return "";
}

class TransactionalProducerCompat : public ::testing::Test {
 protected:
  void SetUp() override {
    if (const std::string missing = MissingTxnTools(); !missing.empty()) {
      GTEST_SKIP() << "SKIPPED: " << missing;
    }
    WriteStringToFile(dir.Join("txn.py"), kScript);
    ASSERT_TRUE(daruma.Start());
    ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
  }

  // The scenario's "key=value" lines.
  std::map<std::string, std::string> Run(const std::string& mode) {
    const std::string out = dir.Join(mode + ".out");
    const std::string cmd = "timeout 150 /usr/bin/python3 " + dir.Join("txn.py") + " " +
                            daruma.bootstrap() + " " + mode + " >" + out + " 2>" +
                            dir.Join(mode + ".err");
    EXPECT_EQ(Shell(cmd), 0) << ReadFileToString(out) << ReadFileToString(dir.Join(mode + ".err"))
                             << daruma.Log();
    std::map<std::string, std::string> fields;
    std::istringstream in(ReadFileToString(out));
    for (std::string line; std::getline(in, line);) {
      const size_t eq = line.find('=');
      if (eq != std::string::npos) fields[line.substr(0, eq)] = line.substr(eq + 1);
    }
    return fields;
  }

  TempDir dir;
  DarumaProcess daruma{dir.path(), "num.partitions=3\n"};
};

TEST_F(TransactionalProducerCompat, ReadCommittedSeesExactlyTheCommittedMessages) {
  std::map<std::string, std::string> r = Run("commit_abort");
  EXPECT_EQ(r["committed_count"], "150");
  EXPECT_EQ(r["committed_exact"], "True");
  EXPECT_EQ(r["committed_reached_end"], "True");
  EXPECT_EQ(r["uncommitted_count"], "200");
  EXPECT_EQ(daruma.Stop(), 0) << daruma.Log();
}

TEST_F(TransactionalProducerCompat, ASecondProducerWithTheSameIdFencesTheFirst) {
  std::map<std::string, std::string> r = Run("fence");
  EXPECT_EQ(r["old_commit"].rfind("failed fatal=True", 0), 0u) << r["old_commit"];
  EXPECT_EQ(r["committed"], "new0,new1,new2,new3,new4,new5,new6,new7,new8,new9");
  EXPECT_EQ(r["committed_reached_end"], "True");
  EXPECT_EQ(daruma.Stop(), 0) << daruma.Log();
}

TEST_F(TransactionalProducerCompat, ConsumeTransformProduceCommitsOffsetsInTheTransaction) {
  std::map<std::string, std::string> r = Run("ctp");
  EXPECT_EQ(r["consumed"], "60");
  EXPECT_EQ(r["committed_offsets"], "20,20,20");
  EXPECT_EQ(r["output_exact"], "True");
  // The offsets survive a restart: they were committed by the marker.
  ASSERT_EQ(daruma.Stop(), 0) << daruma.Log();
  ASSERT_TRUE(daruma.Start());
  ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
  const std::string check =
      "timeout 60 /usr/bin/python3 -c \"from confluent_kafka import Consumer, TopicPartition\n"
      "c = Consumer({'bootstrap.servers': '" +
      daruma.bootstrap() +
      "', 'group.id': 'ctp'})\n"
      "print(','.join(str(tp.offset) for tp in c.committed([TopicPartition('input', i) for i in "
      "range(3)], 30)))\" >" +
      dir.Join("committed.out") + " 2>&1";
  EXPECT_EQ(Shell(check), 0) << ReadFileToString(dir.Join("committed.out"));
  EXPECT_EQ(ReadFileToString(dir.Join("committed.out")), "20,20,20\n");
  EXPECT_EQ(daruma.Stop(), 0) << daruma.Log();
}

TEST_F(TransactionalProducerCompat, AnOpenTransactionIsAbortedAfterACrashOnceItTimesOut) {
  std::map<std::string, std::string> r = Run("dangling");
  ASSERT_EQ(r["left_open"], "true");
  ASSERT_TRUE(daruma.Kill());
  ASSERT_TRUE(daruma.Start());
  ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
  r = Run("after_restart");
  EXPECT_EQ(r["committed_count"], "0");
  EXPECT_EQ(r["committed_reached_end"], "True") << daruma.Log();
  EXPECT_EQ(daruma.Stop(), 0) << daruma.Log();
}

}  // namespace
}  // namespace daruma::broker
