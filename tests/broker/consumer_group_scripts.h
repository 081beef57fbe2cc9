// The Python client programs of the consumer-group compat tests
// (consumer_group_harness.h writes them into each test's directory and runs
// them with /usr/bin/python3): produce.py, consume.py (one group member),
// committed.py (OffsetFetch through Consumer.committed()) and admin_view.py
// (the group as both Python admin clients see it). Each one's arguments and
// output are described above it.
#pragma once

namespace daruma::broker::testing {

// produce.py CLIENT BOOTSTRAP TOPIC PARTITIONS FIRST COUNT: creates TOPIC
// with PARTITIONS partitions unless it exists, then produces the values
// m<FIRST>..m<FIRST+COUNT-1> (six digits), value i to partition i %
// PARTITIONS, acks=all. "ok" when every one was acknowledged.
inline constexpr char kProduceScript[] = R"PY(
import sys
client, bootstrap, topic = sys.argv[1:4]
partitions, first, count = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
values = [('m%06d' % i, i % partitions) for i in range(first, first + count)]
if client == 'kafka-python':
    from kafka import KafkaProducer
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import TopicAlreadyExistsError
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
    try:
        r = admin.create_topics([NewTopic(topic, partitions, 1)])
        codes = [e[1] for e in r.topic_errors]
        if codes != [0]:
            sys.exit('FAILED: create_topics %r' % (r.topic_errors,))
    except TopicAlreadyExistsError:
        pass  # kafka-python raises for error 36 instead of returning it
    admin.close()
    if values:
        p = KafkaProducer(bootstrap_servers=bootstrap, acks='all', linger_ms=5)
        futures = [p.send(topic, value=v.encode(), partition=part) for v, part in values]
        p.flush(30)
        for f in futures:
            f.get(timeout=10)  # raises the error of a failed send
        p.close()
else:
    from confluent_kafka import KafkaException, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({'bootstrap.servers': bootstrap})
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(15)
    except KafkaException as e:
        if e.args[0].code() != 36:
            raise
    errors = []
    def delivered(err, msg):
        if err is not None:
            errors.append(str(err))
    p = Producer({'bootstrap.servers': bootstrap, 'acks': 'all', 'linger.ms': 5})
    for v, part in values:
        while True:
            try:
                p.produce(topic, value=v.encode(), partition=part, on_delivery=delivered)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    left = p.flush(30)
    if left or errors:
        sys.exit('FAILED: %d undelivered, errors %r' % (left, errors[:5]))
print('ok')
)PY";

// consume.py CLIENT BOOTSTRAP GROUP TOPIC OUT UNTIL SESSION_MS API_VERSION:
// one member of GROUP subscribed to TOPIC (auto.offset.reset=earliest, no
// auto commit). UNTIL is a number of messages to take (never more: each batch
// asks for what is left), or the path of a file whose existence says stop.
// After each batch it commits, synchronously, the offset after the last
// message of each partition in it. Appends one line per event to OUT,
// flushed at once:
//   assigned P..   the whole new assignment (on_assign / on_partitions_assigned)
//   revoked P..    (on_revoke / on_partitions_revoked)
//   value P OFFSET VALUE
//   committed P OFFSET   acknowledged by the coordinator
//   error ...
//   closed         after close() (LeaveGroup)
// Exits 0 when it stopped as asked, 3 after its own 90 s deadline.
inline constexpr char kConsumeScript[] = R"PY(
import os, sys, time
client, bootstrap, group, topic, out_path, until = sys.argv[1:7]
session_ms, api = int(sys.argv[7]), sys.argv[8]
out = open(out_path, 'a')
def emit(*words):
    out.write(' '.join(str(w) for w in words) + '\n')
    out.flush()
limit = int(until) if until.isdigit() else None
taken = 0
def done():
    return taken >= limit if limit is not None else os.path.exists(until)
def budget():
    return 100 if limit is None else min(100, limit - taken)
deadline = time.time() + 90
if client == 'kafka-python':
    from kafka import KafkaConsumer, ConsumerRebalanceListener, TopicPartition, OffsetAndMetadata
    class Listener(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked):
            emit('revoked', *sorted(tp.partition for tp in revoked))
        def on_partitions_assigned(self, assigned):
            emit('assigned', *sorted(tp.partition for tp in assigned))
    c = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, auto_offset_reset='earliest',
                      enable_auto_commit=False, session_timeout_ms=session_ms,
                      heartbeat_interval_ms=500, max_poll_interval_ms=max(20000, session_ms),
                      api_version=None if api == 'auto' else tuple(map(int, api.split('.'))))
    c.subscribe([topic], listener=Listener())
    while not done() and time.time() < deadline:
        offsets = {}
        for tp, records in sorted(c.poll(timeout_ms=500, max_records=budget()).items()):
            for r in records:
                emit('value', tp.partition, r.offset, r.value.decode())
                taken += 1
                offsets[tp] = OffsetAndMetadata(r.offset + 1, '')
        if offsets:
            try:
                c.commit(offsets)
                for tp, om in sorted(offsets.items()):
                    emit('committed', tp.partition, om.offset)
            except Exception as e:
                emit('error', 'commit', type(e).__name__, e)
    c.close(autocommit=False)
else:
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    def on_assign(consumer, partitions):
        emit('assigned', *sorted(tp.partition for tp in partitions))
    def on_revoke(consumer, partitions):
        emit('revoked', *sorted(tp.partition for tp in partitions))
    c = Consumer({'bootstrap.servers': bootstrap, 'group.id': group,
                  'auto.offset.reset': 'earliest', 'enable.auto.commit': False,
                  'session.timeout.ms': session_ms, 'heartbeat.interval.ms': 500,
                  'max.poll.interval.ms': max(20000, session_ms)})
    c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
    while not done() and time.time() < deadline:
        offsets = {}
        for m in c.consume(num_messages=budget(), timeout=0.5):
            if m.error():
                emit('error', 'consume', m.error().name())
                continue
            emit('value', m.partition(), m.offset(), m.value().decode())
            taken += 1
            offsets[m.partition()] = m.offset() + 1
        if offsets:
            try:
                result = c.commit(offsets=[TopicPartition(topic, p, o)
                                           for p, o in sorted(offsets.items())],
                                  asynchronous=False)
                for tp in result:
                    if tp.error is not None:
                        emit('error', 'commit', tp.partition, tp.error.name())
                    else:
                        emit('committed', tp.partition, tp.offset)
            except KafkaException as e:
                emit('error', 'commit', e.args[0].name())
    c.close()
emit('closed')
sys.exit(0 if done() else 3)
)PY";

// committed.py BOOTSTRAP GROUP TOPIC PARTITIONS: "P OFFSET" per partition,
// what OffsetFetch answers through confluent's Consumer.committed() (-1001,
// OFFSET_INVALID, when the group has no offset there).
inline constexpr char kCommittedScript[] = R"PY(
import sys
from confluent_kafka import Consumer, TopicPartition
bootstrap, group, topic, partitions = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = Consumer({'bootstrap.servers': bootstrap, 'group.id': group, 'enable.auto.commit': False})
for tp in c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=20):
    if tp.error is not None:
        sys.exit('FAILED: partition %d: %s' % (tp.partition, tp.error))
    print(tp.partition, tp.offset)
c.close()
)PY";

// admin_view.py STAGE BOOTSTRAP GROUP TOPIC PARTITIONS PER_PARTITION: what
// both Python admin clients see of GROUP. STAGE "running": Stable, two
// members splitting TOPIC, PER_PARTITION committed in each partition, and
// DeleteGroups refused with NON_EMPTY_GROUP; "empty": Empty, no members, the
// same offsets; "delete": DeleteGroups succeeds, the group is no longer
// listed and has no committed offsets. "ok" when every check passed.
inline constexpr char kAdminViewScript[] = R"PY(
import struct, sys
stage, bootstrap, group, topic = sys.argv[1:5]
partitions, per_partition = int(sys.argv[5]), int(sys.argv[6])
from confluent_kafka import Consumer, TopicPartition, OFFSET_INVALID
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kafka.errors import NoError, NonEmptyGroupError

def check(cond, what):
    if not cond:
        sys.exit('FAILED (%s): %s' % (stage, what))

def assigned_partitions(assignment):
    # ConsumerProtocolAssignment: version int16, [topic string, [partition
    # int32]], user data bytes.
    out, pos = [], 2
    if not assignment:
        return out
    (topics,) = struct.unpack_from('>i', assignment, pos); pos += 4
    for _ in range(topics):
        (length,) = struct.unpack_from('>h', assignment, pos); pos += 2
        name = assignment[pos:pos + length].decode(); pos += length
        (count,) = struct.unpack_from('>i', assignment, pos); pos += 4
        parts = struct.unpack_from('>%di' % count, assignment, pos); pos += 4 * count
        if name == topic:
            out.extend(parts)
    return out

def splits_topic(shares):
    return all(shares) and sorted(p for s in shares for p in s) == list(range(partitions))

confluent = AdminClient({'bootstrap.servers': bootstrap})
kp = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=20000)
def confluent_groups():  # ListGroups v0, then DescribeGroups v0 of every group
    return {g.id: g for g in confluent.list_groups(timeout=20)}
def kp_offsets():  # OffsetFetch v3 with null topics: all of the group's offsets
    return {tp.partition: om.offset
            for tp, om in kp.list_consumer_group_offsets(group).items() if tp.topic == topic}

if stage in ('running', 'empty'):
    state, members = ('Stable', 2) if stage == 'running' else ('Empty', 0)
    groups = confluent_groups()
    check(group in groups, 'confluent list_groups: %r' % sorted(groups))
    g = groups[group]
    check(g.error is None, 'confluent: error %s' % g.error)
    check(g.state == state, 'confluent: state %r' % g.state)
    check(g.protocol_type == 'consumer', 'confluent: protocol type %r' % g.protocol_type)
    check(len(g.members) == members, 'confluent: %d members' % len(g.members))
    if members:
        check(g.protocol == 'range', 'confluent: protocol %r' % g.protocol)
        shares = [assigned_partitions(m.assignment) for m in g.members]
        check(splits_topic(shares), 'confluent: assignments %r' % shares)
    listed = kp.list_consumer_groups()
    check((group, 'consumer') in listed, 'kafka-python list_consumer_groups: %r' % listed)
    [d] = kp.describe_consumer_groups([group])
    check(d.error_code == 0 and d.group == group, 'kafka-python describe: %r' % (d,))
    check(d.state == state, 'kafka-python: state %r' % d.state)
    check(d.protocol_type == 'consumer', 'kafka-python: protocol type %r' % d.protocol_type)
    check(len(d.members) == members, 'kafka-python: %d members' % len(d.members))
    if members:
        shares = [[tp.partition for tp in m.member_assignment.partitions() if tp.topic == topic]
                  for m in d.members]
        check(splits_topic(shares), 'kafka-python: assignments %r' % shares)
    offsets = kp_offsets()
    check(offsets == {p: per_partition for p in range(partitions)}, 'offsets %r' % offsets)
    if stage == 'running':
        r = kp.delete_consumer_groups([group])
        check(r == [(group, NonEmptyGroupError)], 'delete of a running group: %r' % r)
elif stage == 'delete':
    r = kp.delete_consumer_groups([group])
    check(r == [(group, NoError)], 'delete: %r' % r)
    check(group not in confluent_groups(), 'confluent still lists %s' % group)
    listed = kp.list_consumer_groups()
    check(all(g != group for g, _ in listed), 'kafka-python still lists it: %r' % listed)
    offsets = kp_offsets()
    check(offsets == {}, 'offsets left: %r' % offsets)
    c = Consumer({'bootstrap.servers': bootstrap, 'group.id': group, 'enable.auto.commit': False})
    got = c.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=20)
    c.close()
    check([tp.offset for tp in got] == [OFFSET_INVALID] * partitions,
          'committed: %r' % [(tp.partition, tp.offset) for tp in got])
else:
    sys.exit('unknown stage ' + stage)
kp.close()
print('ok')
)PY";

}  // namespace daruma::broker::testing
