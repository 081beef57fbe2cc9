// Topic configs: Kafka's topic-level config names (the `Configs` of
// CreateTopics, the entries of DescribeConfigs) mapped onto LogConfig.
//
// A topic's effective LogConfig is the broker default (ServerConfig::log, from
// the broker's `log.*` properties) with the topic's overrides applied. Values
// are parsed strictly, as Kafka's ConfigDef does: the whole value must parse
// and lie in Kafka's range; otherwise kInvalidArgument naming the config and
// the value (CreateTopics answers INVALID_CONFIG with that message).
//
// Accepted but not acted on by the log engine (kept and described, so a
// client that sets them sees them back): compression.type (Daruma stores the
// producer's batches as received, i.e. `producer`), min.insync.replicas (only
// 1 is accepted: one node can never have more in-sync replicas).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "log/log_config.h"

namespace daruma::broker {

// Topic config name -> value as given by the client.
using TopicOverrides = std::map<std::string, std::string>;

// One config as DescribeConfigs reports it.
struct TopicConfigEntry {
  std::string name;
  std::string value;
  bool is_default = true;  // false when the topic overrides it (source TOPIC_CONFIG)
};

// Applies `overrides` to `defaults`. kInvalidArgument for an unknown name or a
// bad value, naming both.
Result<LogConfig> ApplyTopicOverrides(const LogConfig& defaults, const TopicOverrides& overrides);

// Every known topic config, sorted by name, with the effective value: the
// override text where there is one, else the default rendered as Kafka does.
std::vector<TopicConfigEntry> DescribeTopicConfigs(const LogConfig& defaults,
                                                   const TopicOverrides& overrides);

bool IsKnownTopicConfig(std::string_view name);

}  // namespace daruma::broker
