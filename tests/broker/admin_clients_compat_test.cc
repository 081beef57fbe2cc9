// The admin APIs of issue 19 driven by real Python admin clients against
// `daruma serve` (label compat): kafka-python 2.0.2's KafkaAdminClient and
// confluent-kafka 1.7.0's AdminClient (librdkafka 2.0.2) each create a topic,
// grow it with create_partitions (and see CreatePartitions' errors), replace
// its overrides with alter_configs, and read them back with describe_configs;
// the partition count is then checked through Metadata.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
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

// admin.py CLIENT BOOTSTRAP: prints "ok" after every step passed; any
// failure exits non-zero with the reason.
constexpr char kAdminScript[] = R"PY(
import sys
client, bootstrap = sys.argv[1:3]
TOPIC = 'admin-' + client

def check(cond, what):
    if not cond:
        sys.exit('FAILED: ' + what)

if client == 'kafka-python':
    from kafka import KafkaConsumer
    from kafka.errors import InvalidPartitionsError
    from kafka.admin import (KafkaAdminClient, NewTopic, NewPartitions, ConfigResource,
                             ConfigResourceType)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    admin.create_topics([NewTopic(TOPIC, 1, 1)])
    r = admin.create_partitions({TOPIC: NewPartitions(3)})
    check([e[1] for e in r.topic_errors] == [0], 'create_partitions: %r' % (r.topic_errors,))
    try:
        admin.create_partitions({TOPIC: NewPartitions(2)})
        sys.exit('FAILED: shrinking succeeded')
    except InvalidPartitionsError:
        pass  # kafka-python raises the error a controller answers
    r = admin.create_partitions({TOPIC: NewPartitions(5)}, validate_only=True)
    check([e[1] for e in r.topic_errors] == [0], 'validate_only: %r' % (r.topic_errors,))
    r = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC,
                                            configs={'retention.ms': '12345',
                                                     'cleanup.policy': 'compact'})])
    check([e[0] for e in r.resources] == [0], 'alter_configs: %r' % (r.resources,))
    r = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC,
                                            configs={'segment.bytes': 'big'})])
    check([e[0] for e in r.resources] == [40], 'bad value is INVALID_CONFIG: %r' % (r.resources,))
    [d] = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, TOPIC)])
    entries = {e[0]: e[1] for e in d.resources[0][4]}
    check(entries.get('retention.ms') == '12345', 'describe retention.ms: %r' % entries.get('retention.ms'))
    check(entries.get('cleanup.policy') == 'compact', 'describe cleanup.policy')
    check(entries.get('segment.bytes') == '1073741824', 'describe segment.bytes')
    consumer = KafkaConsumer(bootstrap_servers=bootstrap)
    check(consumer.partitions_for_topic(TOPIC) == {0, 1, 2}, 'partitions: %r' % consumer.partitions_for_topic(TOPIC))
    consumer.close()
    admin.close()
else:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic, NewPartitions, ConfigResource
    admin = AdminClient({'bootstrap.servers': bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(15)
    admin.create_partitions([NewPartitions(TOPIC, 3)])[TOPIC].result(15)
    try:
        admin.create_partitions([NewPartitions(TOPIC, 2)])[TOPIC].result(15)
        sys.exit('FAILED: shrinking succeeded')
    except KafkaException as e:
        check(e.args[0].code() == 37, 'shrink is INVALID_PARTITIONS: %r' % e)
    admin.create_partitions([NewPartitions(TOPIC, 5)], validate_only=True)[TOPIC].result(15)
    res = ConfigResource('topic', TOPIC, set_config={'retention.ms': '12345',
                                                      'cleanup.policy': 'compact'})
    for f in admin.alter_configs([res]).values():
        f.result(15)
    try:
        bad = ConfigResource('topic', TOPIC, set_config={'segment.bytes': 'big'})
        for f in admin.alter_configs([bad]).values():
            f.result(15)
        sys.exit('FAILED: bad value accepted')
    except KafkaException as e:
        check(e.args[0].code() == 40, 'bad value is INVALID_CONFIG: %r' % e)
    for f in admin.describe_configs([ConfigResource('topic', TOPIC)]).values():
        entries = f.result(15)
    check(entries['retention.ms'].value == '12345', 'describe retention.ms: %r' % entries['retention.ms'])
    check(entries['cleanup.policy'].value == 'compact', 'describe cleanup.policy')
    check(entries['segment.bytes'].value == '1073741824', 'describe segment.bytes')
    md = admin.list_topics(timeout=15)
    check(sorted(md.topics[TOPIC].partitions) == [0, 1, 2], 'partitions: %r' % md.topics[TOPIC].partitions)
print('ok')
)PY";

class AdminClientsCompatTest : public ::testing::TestWithParam<const char*> {};

TEST_P(AdminClientsCompatTest, CreatePartitionsAndAlterConfigsThenDescribe) {
  if (::access(testing::DarumaBinary().c_str(), X_OK) != 0) {
    GTEST_SKIP() << "SKIPPED: " << testing::DarumaBinary() << " not built";
  }
  const std::string client = GetParam();
  const std::string module = client == std::string("kafka-python") ? "kafka" : "confluent_kafka";
  if (Shell("/usr/bin/python3 -c 'import " + module + "' 2>/dev/null") != 0) {
    GTEST_SKIP() << "SKIPPED: /usr/bin/python3 has no " << module << " module";
  }
  TempDir dir;
  DarumaProcess daruma(dir.path(), "");
  ASSERT_TRUE(daruma.Start());
  ASSERT_TRUE(daruma.WaitServing()) << daruma.Log();
  const std::string script = dir.Join("admin.py");
  WriteStringToFile(script, kAdminScript);
  const std::string out = dir.Join("py.out");
  const std::string cmd = "timeout 90 /usr/bin/python3 " + script + " " + client + " " +
                          daruma.bootstrap() + " >" + out + " 2>&1";
  EXPECT_EQ(Shell(cmd), 0) << ReadFileToString(out) << daruma.Log();
  EXPECT_EQ(ReadFileToString(out), "ok\n") << daruma.Log();
  EXPECT_EQ(daruma.Stop(), 0) << daruma.Log();
}

INSTANTIATE_TEST_SUITE_P(Clients, AdminClientsCompatTest,
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
