#include "recovery/config_keys.h"

#include <algorithm>
#include <array>
#include <vector>

namespace daruma {
namespace {

// Every key Daruma reads: recovery/server_config.cc, broker/serve_settings.cc,
// broker/broker_context.cc and broker/broker_identity.cc. A key added there
// must be added here, or `--set` refuses it (server_config_test checks the
// recovery layer's own keys against this list).
constexpr std::array kDarumaKeys = {
    "advertised.listeners",
    "auto.create.topics.enable",
    "background.threads",
    "broker.id",
    "compression.gzip.level",
    "compression.lz4.level",
    "compression.type",
    "compression.zstd.level",
    "connections.max.idle.ms",
    "daruma.crash.loop.max.unclean.starts",
    "daruma.http.listener",
    "daruma.log.level",
    "daruma.max.open.files",
    "daruma.recovery.point.checkpoint.tick.ms",
    "daruma.scrub.bytes.per.second",
    "daruma.scrub.enable",
    "daruma.scrub.initial.delay.ms",
    "daruma.scrub.interval.ms",
    "delete.topic.enable",
    "fetch.max.bytes",
    "listeners",
    "log.cleaner.backoff.ms",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.delete.retention.ms",
    "log.cleaner.enable",
    "log.cleaner.io.buffer.load.factor",
    "log.cleaner.io.buffer.size",
    "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.max.compaction.lag.ms",
    "log.cleaner.min.cleanable.ratio",
    "log.cleaner.min.compaction.lag.ms",
    "log.cleaner.threads",
    "log.cleanup.policy",
    "log.dir",
    "log.dirs",
    "log.flush.interval.messages",
    "log.flush.interval.ms",
    "log.flush.offset.checkpoint.interval.ms",
    "log.flush.scheduler.interval.ms",
    "log.flush.start.offset.checkpoint.interval.ms",
    "log.index.interval.bytes",
    "log.index.size.max.bytes",
    "log.initial.task.delay.ms",
    "log.local.retention.bytes",
    "log.local.retention.ms",
    "log.message.downconversion.enable",
    "log.message.format.version",
    "log.message.timestamp.after.max.ms",
    "log.message.timestamp.before.max.ms",
    "log.message.timestamp.difference.max.ms",
    "log.message.timestamp.type",
    "log.preallocate",
    "log.retention.bytes",
    "log.retention.check.interval.ms",
    "log.retention.hours",
    "log.retention.minutes",
    "log.retention.ms",
    "log.roll.hours",
    "log.roll.jitter.hours",
    "log.roll.jitter.ms",
    "log.roll.ms",
    "log.segment.bytes",
    "log.segment.delete.delay.ms",
    "message.max.bytes",
    "node.id",
    "num.io.threads",
    "num.partitions",
    "num.recovery.threads.per.data.dir",
    "producer.id.expiration.ms",
    "queued.max.request.bytes",
    "replica.high.watermark.checkpoint.interval.ms",
    "socket.request.max.bytes",
    "unclean.leader.election.enable",
};

// The rest of Apache Kafka's broker configuration (3.x and 4.0, KRaft and
// ZooKeeper mode): accepted in a server.properties and with --set, and
// ignored, since a single Daruma node has no use for them.
constexpr std::array kKafkaOnlyKeys = {
    "alter.config.policy.class.name",
    "alter.log.dirs.replication.quota.window.num",
    "alter.log.dirs.replication.quota.window.size.seconds",
    "authorizer.class.name",
    "allow.everyone.if.no.acl.found",
    "auto.include.jmx.reporter",
    "auto.leader.rebalance.enable",
    "broker.heartbeat.interval.ms",
    "broker.id.generation.enable",
    "broker.rack",
    "broker.session.timeout.ms",
    "client.quota.callback.class",
    "client.telemetry.max.bytes",
    "config.providers",
    "connection.failed.authentication.delay.ms",
    "connections.max.reauth.ms",
    "controlled.shutdown.enable",
    "controlled.shutdown.max.retries",
    "controlled.shutdown.retry.backoff.ms",
    "controller.listener.names",
    "controller.quorum.append.linger.ms",
    "controller.quorum.bootstrap.servers",
    "controller.quorum.election.backoff.max.ms",
    "controller.quorum.election.timeout.ms",
    "controller.quorum.fetch.timeout.ms",
    "controller.quorum.request.timeout.ms",
    "controller.quorum.retry.backoff.ms",
    "controller.quorum.voters",
    "controller.socket.timeout.ms",
    "create.topic.policy.class.name",
    "default.replication.factor",
    "delegation.token.expiry.check.interval.ms",
    "delegation.token.expiry.time.ms",
    "delegation.token.master.key",
    "delegation.token.max.lifetime.ms",
    "delegation.token.secret.key",
    "delete.records.purgatory.purge.interval.requests",
    "early.start.listeners",
    "eligible.leader.replicas.enable",
    "fetch.purgatory.purge.interval.requests",
    "group.consumer.assignors",
    "group.consumer.heartbeat.interval.ms",
    "group.consumer.max.heartbeat.interval.ms",
    "group.consumer.max.session.timeout.ms",
    "group.consumer.max.size",
    "group.consumer.migration.policy",
    "group.consumer.min.heartbeat.interval.ms",
    "group.consumer.min.session.timeout.ms",
    "group.consumer.session.timeout.ms",
    "group.coordinator.append.linger.ms",
    "group.coordinator.new.enable",
    "group.coordinator.rebalance.protocols",
    "group.coordinator.threads",
    "group.initial.rebalance.delay.ms",
    "group.max.session.timeout.ms",
    "group.max.size",
    "group.min.session.timeout.ms",
    "group.share.enable",
    "initial.broker.registration.timeout.ms",
    "inter.broker.listener.name",
    "inter.broker.protocol.version",
    "kafka.metrics.polling.interval.secs",
    "kafka.metrics.reporters",
    "leader.imbalance.check.interval.seconds",
    "leader.imbalance.per.broker.percentage",
    "listener.security.protocol.map",
    "log.dir.failure.timeout.ms",
    "max.connection.creation.rate",
    "max.connections",
    "max.connections.per.ip",
    "max.connections.per.ip.overrides",
    "max.incremental.fetch.session.cache.slots",
    "metadata.log.dir",
    "metadata.log.max.record.bytes.between.snapshots",
    "metadata.log.max.snapshot.interval.ms",
    "metadata.log.segment.bytes",
    "metadata.log.segment.ms",
    "metadata.max.idle.interval.ms",
    "metadata.max.retention.bytes",
    "metadata.max.retention.ms",
    "metric.reporters",
    "metrics.num.samples",
    "metrics.recording.level",
    "metrics.sample.window.ms",
    "min.insync.replicas",
    "num.network.threads",
    "num.replica.alter.log.dirs.threads",
    "num.replica.fetchers",
    "offset.metadata.max.bytes",
    "offsets.commit.required.acks",
    "offsets.commit.timeout.ms",
    "offsets.load.buffer.size",
    "offsets.retention.check.interval.ms",
    "offsets.retention.minutes",
    "offsets.topic.compression.codec",
    "offsets.topic.num.partitions",
    "offsets.topic.replication.factor",
    "offsets.topic.segment.bytes",
    "password.encoder.cipher.algorithm",
    "password.encoder.iterations",
    "password.encoder.key.length",
    "password.encoder.keyfactory.algorithm",
    "password.encoder.old.secret",
    "password.encoder.secret",
    "principal.builder.class",
    "process.roles",
    "producer.id.expiration.check.interval.ms",
    "producer.purgatory.purge.interval.requests",
    "queued.max.requests",
    "quota.window.num",
    "quota.window.size.seconds",
    "remote.fetch.max.wait.ms",
    "remote.log.index.file.cache.total.size.bytes",
    "remote.log.manager.copy.max.bytes.per.second",
    "remote.log.manager.fetch.max.bytes.per.second",
    "remote.log.manager.task.interval.ms",
    "remote.log.manager.thread.pool.size",
    "remote.log.metadata.custom.metadata.max.bytes",
    "remote.log.metadata.manager.class.name",
    "remote.log.metadata.manager.class.path",
    "remote.log.metadata.manager.impl.prefix",
    "remote.log.metadata.manager.listener.name",
    "remote.log.reader.max.pending.tasks",
    "remote.log.reader.threads",
    "remote.log.storage.manager.class.name",
    "remote.log.storage.manager.class.path",
    "remote.log.storage.manager.impl.prefix",
    "remote.log.storage.system.enable",
    "replica.fetch.backoff.ms",
    "replica.fetch.max.bytes",
    "replica.fetch.min.bytes",
    "replica.fetch.response.max.bytes",
    "replica.fetch.wait.max.ms",
    "replica.lag.time.max.ms",
    "replica.selector.class",
    "replica.socket.receive.buffer.bytes",
    "replica.socket.timeout.ms",
    "replication.quota.window.num",
    "replication.quota.window.size.seconds",
    "request.timeout.ms",
    "reserved.broker.max.id",
    "sasl.client.callback.handler.class",
    "sasl.enabled.mechanisms",
    "sasl.jaas.config",
    "sasl.kerberos.kinit.cmd",
    "sasl.kerberos.min.time.before.relogin",
    "sasl.kerberos.principal.to.local.rules",
    "sasl.kerberos.service.name",
    "sasl.kerberos.ticket.renew.jitter",
    "sasl.kerberos.ticket.renew.window.factor",
    "sasl.login.callback.handler.class",
    "sasl.login.class",
    "sasl.login.connect.timeout.ms",
    "sasl.login.read.timeout.ms",
    "sasl.login.refresh.buffer.seconds",
    "sasl.login.refresh.min.period.seconds",
    "sasl.login.refresh.window.factor",
    "sasl.login.refresh.window.jitter",
    "sasl.login.retry.backoff.max.ms",
    "sasl.login.retry.backoff.ms",
    "sasl.mechanism.controller.protocol",
    "sasl.mechanism.inter.broker.protocol",
    "sasl.oauthbearer.clock.skew.seconds",
    "sasl.oauthbearer.expected.audience",
    "sasl.oauthbearer.expected.issuer",
    "sasl.oauthbearer.jwks.endpoint.refresh.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms",
    "sasl.oauthbearer.jwks.endpoint.retry.backoff.ms",
    "sasl.oauthbearer.jwks.endpoint.url",
    "sasl.oauthbearer.scope.claim.name",
    "sasl.oauthbearer.sub.claim.name",
    "sasl.oauthbearer.token.endpoint.url",
    "sasl.server.callback.handler.class",
    "sasl.server.max.receive.size",
    "security.inter.broker.protocol",
    "security.providers",
    "socket.connection.setup.timeout.max.ms",
    "socket.connection.setup.timeout.ms",
    "socket.listen.backlog.size",
    "socket.receive.buffer.bytes",
    "socket.send.buffer.bytes",
    "ssl.allow.dn.changes",
    "ssl.allow.san.changes",
    "ssl.cipher.suites",
    "ssl.client.auth",
    "ssl.enabled.protocols",
    "ssl.endpoint.identification.algorithm",
    "ssl.engine.factory.class",
    "ssl.key.password",
    "ssl.keymanager.algorithm",
    "ssl.keystore.certificate.chain",
    "ssl.keystore.key",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.type",
    "ssl.principal.mapping.rules",
    "ssl.protocol",
    "ssl.provider",
    "ssl.secure.random.implementation",
    "ssl.trustmanager.algorithm",
    "ssl.truststore.certificates",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.type",
    "super.users",
    "telemetry.max.bytes",
    "transaction.abort.timed.out.transaction.cleanup.interval.ms",
    "transaction.max.timeout.ms",
    "transaction.partition.verification.enable",
    "transaction.remove.expired.transaction.cleanup.interval.ms",
    "transaction.state.log.load.buffer.size",
    "transaction.state.log.min.isr",
    "transaction.state.log.num.partitions",
    "transaction.state.log.replication.factor",
    "transaction.state.log.segment.bytes",
    "transactional.id.expiration.ms",
    "unstable.api.versions.enable",
    "unstable.feature.versions.enable",
    "unstable.metadata.versions.enable",
    "zookeeper.clientCnxnSocket",
    "zookeeper.connect",
    "zookeeper.connection.timeout.ms",
    "zookeeper.max.in.flight.requests",
    "zookeeper.metadata.migration.enable",
    "zookeeper.session.timeout.ms",
    "zookeeper.set.acl",
    "zookeeper.ssl.cipher.suites",
    "zookeeper.ssl.client.enable",
    "zookeeper.ssl.crl.enable",
    "zookeeper.ssl.enabled.protocols",
    "zookeeper.ssl.endpoint.identification.algorithm",
    "zookeeper.ssl.keystore.location",
    "zookeeper.ssl.keystore.password",
    "zookeeper.ssl.keystore.type",
    "zookeeper.ssl.ocsp.enable",
    "zookeeper.ssl.protocol",
    "zookeeper.ssl.truststore.location",
    "zookeeper.ssl.truststore.password",
    "zookeeper.ssl.truststore.type",
};

// Kafka's keys that take a user-chosen middle or tail: per-listener security
// settings, config provider parameters, remote storage plug-in settings.
constexpr std::array kKafkaPrefixes = {"listener.name.", "config.providers.", "rsm.config.",
                                       "rlmm.config."};

template <size_t N>
bool Contains(const std::array<const char*, N>& keys, std::string_view key) {
  return std::any_of(keys.begin(), keys.end(), [&](const char* k) { return key == k; });
}

size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

bool IsDarumaConfigKey(std::string_view key) {
  return Contains(kDarumaKeys, key);
}

bool IsUnderKafkaPrefix(std::string_view key) {
  return std::any_of(kKafkaPrefixes.begin(), kKafkaPrefixes.end(), [&](const char* prefix) {
    return key.starts_with(prefix) && key.size() > std::string_view(prefix).size();
  });
}

bool IsKnownConfigKey(std::string_view key) {
  return IsDarumaConfigKey(key) || Contains(kKafkaOnlyKeys, key) || IsUnderKafkaPrefix(key);
}

namespace {

// The known key closest to `key` and its edit distance.
std::pair<std::string, size_t> Nearest(std::string_view key) {
  // Daruma's keys first, so a tie goes to a key that does something.
  std::string best;
  size_t best_distance = SIZE_MAX;
  auto consider = [&](const char* candidate) {
    const size_t d = EditDistance(key, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  };
  for (const char* k : kDarumaKeys) consider(k);
  for (const char* k : kKafkaOnlyKeys) consider(k);
  return {best, best_distance};
}

}  // namespace

std::string NearestConfigKey(std::string_view key) {
  return Nearest(key).first;
}

std::string UnknownConfigKeyMessage(std::string_view key) {
  const auto [nearest, distance] = Nearest(key);
  // A few edits away is a typo; farther, "did you mean" would be a guess.
  if (distance <= std::max<size_t>(3, key.size() / 4)) {
    return "unknown key \"" + std::string(key) + "\" (did you mean \"" + nearest + "\"?)";
  }
  return "unknown key \"" + std::string(key) +
         "\": not a Daruma or Kafka broker setting (the nearest is \"" + nearest + "\")";
}

}  // namespace daruma
