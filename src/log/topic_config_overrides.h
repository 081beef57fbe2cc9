// Topic config overrides by Kafka name (spec §13): `{name: value}` as a client
// gives them to CreateTopics / IncrementalAlterConfigs, applied onto a
// LogConfig holding the broker defaults.
//
// Values are parsed strictly, as Kafka's ConfigDef does: the whole value must
// parse and lie in Kafka's range, else kInvalidArgument naming the config and
// the value ("invalid value \"x\" for config segment.bytes: expected an
// integer"). compression.type and min.insync.replicas are accepted (so they can
// be kept and described) but change nothing in LogConfig: Daruma stores the
// producer's batches as received, and one node has one in-sync replica.
//
// Lives in the log layer so both the log manager (which persists overrides,
// recovery/topic_config_file.h) and the broker can use one table.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"
#include "log/log_config.h"

namespace daruma {

// Topic config name -> value as given by the client.
using TopicConfigOverrides = std::map<std::string, std::string>;

bool IsKnownTopicConfigName(std::string_view name);

// Applies one override onto *config. kInvalidArgument for an unknown name or
// a bad value (naming both); *config is unchanged then.
Status ApplyTopicConfigOverride(std::string_view name, std::string_view value, LogConfig* config);

// Applies every override onto a copy of `defaults`; the first error wins,
// then Kafka's check across configs (min.compaction.lag.ms above
// max.compaction.lag.ms is kInvalidArgument, as Kafka's validateValues).
Result<LogConfig> ApplyTopicConfigOverrides(const LogConfig& defaults,
                                            const TopicConfigOverrides& overrides);

// The overrides that turn `defaults` into `config`: every known name whose
// rendered value differs, rendered as Kafka does (cleanup.policy
// "compact,delete", message.timestamp.type "LogAppendTime", ...).
// ApplyTopicConfigOverrides(defaults, DiffTopicConfig(defaults, config))
// reproduces every LogConfig field the table covers.
TopicConfigOverrides DiffTopicConfig(const LogConfig& defaults, const LogConfig& config);
// Every known topic config, sorted by name, with its value in `config`
// rendered as Kafka does (what DescribeConfigs shows for a default).
std::vector<std::pair<std::string, std::string>> RenderTopicConfigs(const LogConfig& config);

}  // namespace daruma
