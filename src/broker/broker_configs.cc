#include "broker/broker_configs.h"

#include <algorithm>
#include <array>

#include "recovery/config_keys.h"

namespace daruma::broker {
namespace {

struct BrokerConfigDef {
  std::string_view name;
  const char* default_value;  // nullptr: none (described as null)
  ConfigType type;
};

using T = ConfigType;

// Kafka 3.9's defaults of the broker configs an operator or a UI looks for:
// every key Daruma reads (recovery/config_keys.cc) and the group, offsets
// and transaction settings its coordinators honour, plus the common ones of
// a KRaft broker's server.properties. Sorted by name (checked by a test).
constexpr std::array kBrokerConfigs = {
    BrokerConfigDef{"advertised.listeners", nullptr, T::kString},
    BrokerConfigDef{"auto.create.topics.enable", "true", T::kBoolean},
    BrokerConfigDef{"auto.leader.rebalance.enable", "true", T::kBoolean},
    BrokerConfigDef{"background.threads", "10", T::kInt},
    BrokerConfigDef{"broker.id", "-1", T::kInt},
    BrokerConfigDef{"broker.rack", nullptr, T::kString},
    BrokerConfigDef{"compression.gzip.level", "-1", T::kInt},
    BrokerConfigDef{"compression.lz4.level", "9", T::kInt},
    BrokerConfigDef{"compression.type", "producer", T::kString},
    BrokerConfigDef{"compression.zstd.level", "3", T::kInt},
    BrokerConfigDef{"connections.max.idle.ms", "600000", T::kLong},
    BrokerConfigDef{"controlled.shutdown.enable", "true", T::kBoolean},
    BrokerConfigDef{"controller.listener.names", nullptr, T::kString},
    BrokerConfigDef{"default.replication.factor", "1", T::kInt},
    BrokerConfigDef{"delete.topic.enable", "true", T::kBoolean},
    BrokerConfigDef{"fetch.max.bytes", "57671680", T::kInt},
    BrokerConfigDef{"group.initial.rebalance.delay.ms", "3000", T::kInt},
    BrokerConfigDef{"group.max.session.timeout.ms", "1800000", T::kInt},
    BrokerConfigDef{"group.max.size", "2147483647", T::kInt},
    BrokerConfigDef{"group.min.session.timeout.ms", "6000", T::kInt},
    BrokerConfigDef{"inter.broker.listener.name", nullptr, T::kString},
    BrokerConfigDef{"listeners", "PLAINTEXT://:9092", T::kString},
    BrokerConfigDef{"log.cleaner.backoff.ms", "15000", T::kLong},
    BrokerConfigDef{"log.cleaner.dedupe.buffer.size", "134217728", T::kLong},
    BrokerConfigDef{"log.cleaner.delete.retention.ms", "86400000", T::kLong},
    BrokerConfigDef{"log.cleaner.enable", "true", T::kBoolean},
    BrokerConfigDef{"log.cleaner.io.buffer.load.factor", "0.9", T::kDouble},
    BrokerConfigDef{"log.cleaner.io.buffer.size", "524288", T::kInt},
    BrokerConfigDef{"log.cleaner.io.max.bytes.per.second", "1.7976931348623157E308", T::kDouble},
    BrokerConfigDef{"log.cleaner.max.compaction.lag.ms", "9223372036854775807", T::kLong},
    BrokerConfigDef{"log.cleaner.min.cleanable.ratio", "0.5", T::kDouble},
    BrokerConfigDef{"log.cleaner.min.compaction.lag.ms", "0", T::kLong},
    BrokerConfigDef{"log.cleaner.threads", "1", T::kInt},
    BrokerConfigDef{"log.cleanup.policy", "delete", T::kList},
    BrokerConfigDef{"log.dir", "/tmp/kafka-logs", T::kString},
    BrokerConfigDef{"log.dirs", nullptr, T::kString},
    BrokerConfigDef{"log.flush.interval.messages", "9223372036854775807", T::kLong},
    BrokerConfigDef{"log.flush.interval.ms", nullptr, T::kLong},
    BrokerConfigDef{"log.flush.offset.checkpoint.interval.ms", "60000", T::kInt},
    BrokerConfigDef{"log.flush.scheduler.interval.ms", "9223372036854775807", T::kLong},
    BrokerConfigDef{"log.flush.start.offset.checkpoint.interval.ms", "60000", T::kInt},
    BrokerConfigDef{"log.index.interval.bytes", "4096", T::kInt},
    BrokerConfigDef{"log.index.size.max.bytes", "10485760", T::kInt},
    BrokerConfigDef{"log.local.retention.bytes", "-2", T::kLong},
    BrokerConfigDef{"log.local.retention.ms", "-2", T::kLong},
    BrokerConfigDef{"log.message.downconversion.enable", "true", T::kBoolean},
    BrokerConfigDef{"log.message.format.version", "3.0-IV1", T::kString},
    BrokerConfigDef{"log.message.timestamp.after.max.ms", "9223372036854775807", T::kLong},
    BrokerConfigDef{"log.message.timestamp.before.max.ms", "9223372036854775807", T::kLong},
    BrokerConfigDef{"log.message.timestamp.difference.max.ms", "9223372036854775807", T::kLong},
    BrokerConfigDef{"log.message.timestamp.type", "CreateTime", T::kString},
    BrokerConfigDef{"log.preallocate", "false", T::kBoolean},
    BrokerConfigDef{"log.retention.bytes", "-1", T::kLong},
    BrokerConfigDef{"log.retention.check.interval.ms", "300000", T::kLong},
    BrokerConfigDef{"log.retention.hours", "168", T::kInt},
    BrokerConfigDef{"log.retention.minutes", nullptr, T::kInt},
    BrokerConfigDef{"log.retention.ms", nullptr, T::kLong},
    BrokerConfigDef{"log.roll.hours", "168", T::kInt},
    BrokerConfigDef{"log.roll.jitter.hours", "0", T::kInt},
    BrokerConfigDef{"log.roll.jitter.ms", nullptr, T::kLong},
    BrokerConfigDef{"log.roll.ms", nullptr, T::kLong},
    BrokerConfigDef{"log.segment.bytes", "1073741824", T::kInt},
    BrokerConfigDef{"log.segment.delete.delay.ms", "60000", T::kLong},
    BrokerConfigDef{"max.connections", "2147483647", T::kInt},
    BrokerConfigDef{"max.connections.per.ip", "2147483647", T::kInt},
    BrokerConfigDef{"message.max.bytes", "1048588", T::kInt},
    BrokerConfigDef{"metadata.log.dir", nullptr, T::kString},
    BrokerConfigDef{"min.insync.replicas", "1", T::kInt},
    BrokerConfigDef{"node.id", "-1", T::kInt},
    BrokerConfigDef{"num.io.threads", "8", T::kInt},
    BrokerConfigDef{"num.network.threads", "3", T::kInt},
    BrokerConfigDef{"num.partitions", "1", T::kInt},
    BrokerConfigDef{"num.recovery.threads.per.data.dir", "1", T::kInt},
    BrokerConfigDef{"num.replica.fetchers", "1", T::kInt},
    BrokerConfigDef{"offset.metadata.max.bytes", "4096", T::kInt},
    BrokerConfigDef{"offsets.commit.timeout.ms", "5000", T::kInt},
    BrokerConfigDef{"offsets.load.buffer.size", "5242880", T::kInt},
    BrokerConfigDef{"offsets.retention.check.interval.ms", "600000", T::kLong},
    BrokerConfigDef{"offsets.retention.minutes", "10080", T::kInt},
    BrokerConfigDef{"offsets.topic.compression.codec", "0", T::kInt},
    BrokerConfigDef{"offsets.topic.num.partitions", "50", T::kInt},
    BrokerConfigDef{"offsets.topic.replication.factor", "3", T::kShort},
    BrokerConfigDef{"offsets.topic.segment.bytes", "104857600", T::kInt},
    BrokerConfigDef{"process.roles", "", T::kList},
    BrokerConfigDef{"producer.id.expiration.check.interval.ms", "600000", T::kInt},
    BrokerConfigDef{"producer.id.expiration.ms", "86400000", T::kInt},
    BrokerConfigDef{"queued.max.request.bytes", "-1", T::kLong},
    BrokerConfigDef{"queued.max.requests", "500", T::kInt},
    BrokerConfigDef{"replica.fetch.max.bytes", "1048576", T::kInt},
    BrokerConfigDef{"replica.high.watermark.checkpoint.interval.ms", "5000", T::kLong},
    BrokerConfigDef{"replica.lag.time.max.ms", "30000", T::kLong},
    BrokerConfigDef{"request.timeout.ms", "30000", T::kInt},
    BrokerConfigDef{"socket.receive.buffer.bytes", "102400", T::kInt},
    BrokerConfigDef{"socket.request.max.bytes", "104857600", T::kInt},
    BrokerConfigDef{"socket.send.buffer.bytes", "102400", T::kInt},
    BrokerConfigDef{"transaction.abort.timed.out.transaction.cleanup.interval.ms", "10000",
                    T::kInt},
    BrokerConfigDef{"transaction.max.timeout.ms", "900000", T::kInt},
    BrokerConfigDef{"transaction.partition.verification.enable", "true", T::kBoolean},
    BrokerConfigDef{"transaction.remove.expired.transaction.cleanup.interval.ms", "3600000",
                    T::kInt},
    BrokerConfigDef{"transaction.state.log.load.buffer.size", "5242880", T::kInt},
    BrokerConfigDef{"transaction.state.log.min.isr", "2", T::kInt},
    BrokerConfigDef{"transaction.state.log.num.partitions", "50", T::kInt},
    BrokerConfigDef{"transaction.state.log.replication.factor", "3", T::kShort},
    BrokerConfigDef{"transaction.state.log.segment.bytes", "104857600", T::kInt},
    BrokerConfigDef{"transactional.id.expiration.ms", "604800000", T::kInt},
    BrokerConfigDef{"unclean.leader.election.enable", "false", T::kBoolean},
};

const BrokerConfigDef* FindDef(std::string_view name) {
  auto it =
      std::lower_bound(kBrokerConfigs.begin(), kBrokerConfigs.end(), name,
                       [](const BrokerConfigDef& d, std::string_view n) { return d.name < n; });
  return it != kBrokerConfigs.end() && it->name == name ? &*it : nullptr;
}

// Kafka's PASSWORD-type broker configs, by name: their values are never
// returned.
bool IsSensitive(std::string_view name) {
  if (name.starts_with("password.encoder.")) return name.ends_with("secret");
  return name.find("password") != std::string_view::npos ||
         name.find("jaas.config") != std::string_view::npos ||
         name.find("secret") != std::string_view::npos ||
         name.find("master.key") != std::string_view::npos || name.ends_with("keystore.key") ||
         name.ends_with("keystore.certificate.chain") || name.ends_with("truststore.certificates");
}

// Kafka's ServerTopicConfigSynonyms: a topic config and the broker configs
// behind it, most precedent first.
struct SynonymDef {
  std::string_view topic;
  std::array<std::string_view, 3> broker;  // empty names unused
};
constexpr std::array kSynonyms = {
    SynonymDef{"cleanup.policy", {"log.cleanup.policy"}},
    SynonymDef{"compression.gzip.level", {"compression.gzip.level"}},
    SynonymDef{"compression.lz4.level", {"compression.lz4.level"}},
    SynonymDef{"compression.type", {"compression.type"}},
    SynonymDef{"compression.zstd.level", {"compression.zstd.level"}},
    SynonymDef{"delete.retention.ms", {"log.cleaner.delete.retention.ms"}},
    SynonymDef{"file.delete.delay.ms", {"log.segment.delete.delay.ms"}},
    SynonymDef{"flush.messages", {"log.flush.interval.messages"}},
    SynonymDef{"flush.ms", {"log.flush.interval.ms", "log.flush.scheduler.interval.ms"}},
    SynonymDef{"index.interval.bytes", {"log.index.interval.bytes"}},
    SynonymDef{"local.retention.bytes", {"log.local.retention.bytes"}},
    SynonymDef{"local.retention.ms", {"log.local.retention.ms"}},
    SynonymDef{"max.compaction.lag.ms", {"log.cleaner.max.compaction.lag.ms"}},
    SynonymDef{"max.message.bytes", {"message.max.bytes"}},
    SynonymDef{"message.downconversion.enable", {"log.message.downconversion.enable"}},
    SynonymDef{"message.format.version", {"log.message.format.version"}},
    SynonymDef{"message.timestamp.after.max.ms", {"log.message.timestamp.after.max.ms"}},
    SynonymDef{"message.timestamp.before.max.ms", {"log.message.timestamp.before.max.ms"}},
    SynonymDef{"message.timestamp.difference.max.ms", {"log.message.timestamp.difference.max.ms"}},
    SynonymDef{"message.timestamp.type", {"log.message.timestamp.type"}},
    SynonymDef{"min.cleanable.dirty.ratio", {"log.cleaner.min.cleanable.ratio"}},
    SynonymDef{"min.compaction.lag.ms", {"log.cleaner.min.compaction.lag.ms"}},
    SynonymDef{"min.insync.replicas", {"min.insync.replicas"}},
    SynonymDef{"preallocate", {"log.preallocate"}},
    SynonymDef{"retention.bytes", {"log.retention.bytes"}},
    SynonymDef{"retention.ms",
               {"log.retention.ms", "log.retention.minutes", "log.retention.hours"}},
    SynonymDef{"segment.bytes", {"log.segment.bytes"}},
    SynonymDef{"segment.index.bytes", {"log.index.size.max.bytes"}},
    SynonymDef{"segment.jitter.ms", {"log.roll.jitter.ms", "log.roll.jitter.hours"}},
    SynonymDef{"segment.ms", {"log.roll.ms", "log.roll.hours"}},
    SynonymDef{"unclean.leader.election.enable", {"unclean.leader.election.enable"}},
};

}  // namespace

std::vector<DescribedBrokerConfig> DescribeBrokerConfigs(const PropertyMap& given) {
  std::vector<DescribedBrokerConfig> out;
  auto add = [&](std::string_view name, std::optional<std::string> value, ConfigSource source,
                 ConfigType type) {
    // A setting of unknown type (a plug-in's, under Kafka's open-ended
    // prefixes, where storage account keys and vault tokens live) is
    // sensitive to Kafka too (KafkaConfig.maybeSensitive).
    DescribedBrokerConfig c{std::string(name), std::move(value), source, type,
                            IsSensitive(name) || IsUnderKafkaPrefix(name)};
    if (c.sensitive) {
      c.value.reset();
      c.type = ConfigType::kPassword;
    }
    out.push_back(std::move(c));
  };
  for (const BrokerConfigDef& def : kBrokerConfigs) {
    auto it = given.find(std::string(def.name));
    if (it != given.end()) {
      add(def.name, it->second, ConfigSource::kStaticBrokerConfig, def.type);
    } else {
      std::optional<std::string> value;
      if (def.default_value != nullptr) value = def.default_value;
      add(def.name, std::move(value), ConfigSource::kDefaultConfig, def.type);
    }
  }
  // What server.properties sets beyond the table: Kafka's other keys
  // (which this node accepts and ignores) and Daruma's own.
  for (const auto& [name, value] : given) {
    if (FindDef(name) != nullptr || !IsKnownConfigKey(name)) continue;
    add(name, value, ConfigSource::kStaticBrokerConfig, ConfigType::kString);
  }
  std::sort(out.begin(), out.end(),
            [](const DescribedBrokerConfig& a, const DescribedBrokerConfig& b) {
              return a.name < b.name;
            });
  return out;
}

std::optional<std::string_view> BrokerConfigDefault(std::string_view name) {
  const BrokerConfigDef* def = FindDef(name);
  if (def == nullptr || def->default_value == nullptr) return std::nullopt;
  return std::string_view(def->default_value);
}

std::vector<std::string_view> BrokerSynonymsOf(std::string_view topic_config) {
  std::vector<std::string_view> out;
  for (const SynonymDef& s : kSynonyms) {
    if (s.topic != topic_config) continue;
    for (std::string_view b : s.broker) {
      if (!b.empty()) out.push_back(b);
    }
  }
  return out;
}

bool BrokerSetsSynonymOf(std::string_view topic_config, const PropertyMap& given) {
  for (std::string_view b : BrokerSynonymsOf(topic_config)) {
    if (given.count(std::string(b)) > 0) return true;
  }
  return false;
}

std::vector<DescribeConfigsResponse::Synonym> TopicConfigSynonyms(const std::string& name,
                                                                  const std::string& value,
                                                                  ConfigSource source,
                                                                  const PropertyMap& given) {
  std::vector<DescribeConfigsResponse::Synonym> out;
  auto add = [&](std::string_view n, std::string v, ConfigSource s) {
    DescribeConfigsResponse::Synonym syn;
    syn.name = std::string(n);
    syn.value = std::move(v);
    syn.source = int8_t(s);
    out.push_back(std::move(syn));
  };
  if (source == ConfigSource::kTopicConfig) add(name, value, source);
  const std::vector<std::string_view> broker = BrokerSynonymsOf(name);
  for (std::string_view b : broker) {
    auto it = given.find(std::string(b));
    if (it != given.end()) add(b, it->second, ConfigSource::kStaticBrokerConfig);
  }
  for (std::string_view b : broker) {
    if (std::optional<std::string_view> d = BrokerConfigDefault(b)) {
      add(b, std::string(*d), ConfigSource::kDefaultConfig);
      break;
    }
  }
  // A topic config with no broker synonym (say remote.storage.enable): its
  // own default.
  if (broker.empty() && source != ConfigSource::kTopicConfig) add(name, value, source);
  return out;
}

}  // namespace daruma::broker
