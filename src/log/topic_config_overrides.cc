#include "log/topic_config_overrides.h"

#include <fmt/format.h>

#include <cctype>
#include <charconv>
#include <cstdint>
#include <functional>
#include <limits>

namespace daruma {
namespace {

Status Bad(std::string_view name, std::string_view value, const std::string& why) {
  return Status::InvalidArgument(
      fmt::format("invalid value \"{}\" for config {}: {}", value, name, why));
}

template <typename T>
Status ParseInt(std::string_view name, std::string_view value, T min, T* out) {
  T parsed = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
    return Bad(name, value, "expected an integer");
  }
  if (parsed < min) return Bad(name, value, fmt::format("expected at least {}", min));
  *out = parsed;
  return Status::Ok();
}

Status ParseRatio(std::string_view name, std::string_view value, double* out) {
  double parsed = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), parsed);
  if (value.empty() || ec != std::errc() || end != value.data() + value.size()) {
    return Bad(name, value, "expected a number");
  }
  if (!(parsed >= 0 && parsed <= 1)) return Bad(name, value, "expected a value in [0, 1]");
  *out = parsed;
  return Status::Ok();
}

std::string_view TrimValue(std::string_view s) {
  while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

Status ParseCleanupPolicy(std::string_view name, std::string_view value, LogConfig* c) {
  bool compact = false;
  bool del = false;
  // Kafka's LIST type: an empty value is an empty list (neither deletion nor
  // compaction), which its ValidList accepts; an empty item is not valid.
  size_t start = TrimValue(value).empty() ? value.size() + 1 : 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string_view::npos) comma = value.size();
    const std::string_view item = TrimValue(value.substr(start, comma - start));
    if (item == "compact") {
      compact = true;
    } else if (item == "delete") {
      del = true;
    } else {
      return Bad(name, value, "expected a list of delete, compact");
    }
    start = comma + 1;
  }
  c->compact = compact;
  c->delete_policy = del;
  return Status::Ok();
}

std::string RenderCleanupPolicy(const LogConfig& c) {
  if (c.compact && c.delete_policy) return "compact,delete";
  if (!c.compact && !c.delete_policy) return "";
  return c.compact ? "compact" : "delete";
}

// One known config: how to apply a value and how to render the effective one.
struct ConfigDef {
  const char* name;
  std::function<Status(std::string_view, LogConfig*)> apply;
  std::function<std::string(const LogConfig&)> render;
};

template <typename T>
ConfigDef IntDef(const char* name, T LogConfig::*field, T min) {
  return ConfigDef{name,
                   [name, field, min](std::string_view v, LogConfig* c) {
                     return ParseInt<T>(name, v, min, &(c->*field));
                   },
                   [field](const LogConfig& c) { return std::to_string(c.*field); }};
}

ConfigDef CompressionTypeDef() {
  return {"compression.type",
          [](std::string_view v, LogConfig* c) {
            if (v == "producer") {
              c->compression_type = std::nullopt;
              return Status::Ok();
            }
            if (v == "uncompressed") {
              c->compression_type = CompressionType::kNone;
              return Status::Ok();
            }
            std::optional<CompressionType> type = CompressionFromName(v);
            if (!type || *type == CompressionType::kNone) {
              return Bad("compression.type", v,
                         "expected one of uncompressed, zstd, lz4, snappy, gzip, producer");
            }
            c->compression_type = type;
            return Status::Ok();
          },
          [](const LogConfig& c) {
            if (!c.compression_type) return std::string("producer");
            if (*c.compression_type == CompressionType::kNone) return std::string("uncompressed");
            return std::string(CompressionName(*c.compression_type));
          }};
}

ConfigDef BoolDef(const char* name, bool LogConfig::*field) {
  return {name,
          [name, field](std::string_view v, LogConfig* c) {
            if (v != "true" && v != "false") return Bad(name, v, "expected true or false");
            c->*field = v == "true";
            return Status::Ok();
          },
          [field](const LogConfig& c) { return std::string(c.*field ? "true" : "false"); }};
}

// An int in [min, max], as Kafka's ConfigDef.Range.between.
ConfigDef RangeDef(const char* name, int32_t LogConfig::*field, int32_t min, int32_t max) {
  return {
      name,
      [name, field, min, max](std::string_view v, LogConfig* c) {
        int32_t n = 0;
        DARUMA_RETURN_IF_ERROR(ParseInt<int32_t>(name, v, std::numeric_limits<int32_t>::min(), &n));
        // Kafka's gzip level also takes -1, zlib's default.
        const bool gzip_default = n == -1 && std::string_view(name) == "compression.gzip.level";
        if (!gzip_default && (n < min || n > max)) {
          return Bad(name, v, fmt::format("expected a value in [{}, {}]", min, max));
        }
        c->*field = n;
        return Status::Ok();
      },
      [field](const LogConfig& c) { return std::to_string(c.*field); }};
}

// Kafka's MetadataVersionValidator: "0.10.2", "2.8", "3.0-IV1"...
ConfigDef MessageFormatVersionDef() {
  return {
      "message.format.version",
      [](std::string_view v, LogConfig* c) {
        size_t i = 0, dots = 0;
        bool digit = false;
        while (i < v.size() && (std::isdigit(static_cast<unsigned char>(v[i])) || v[i] == '.')) {
          digit = digit || v[i] != '.';
          dots += v[i] == '.';
          ++i;
        }
        std::string_view rest = v.substr(i);
        const bool iv =
            rest.empty() || (rest.size() > 3 && rest.substr(0, 3) == "-IV" &&
                             rest.find_first_not_of("0123456789", 3) == std::string_view::npos);
        if (!digit || dots < 1 || dots > 2 || v.front() == '.' || !iv) {
          return Bad("message.format.version", v, "expected a Kafka version such as 3.0-IV1");
        }
        c->message_format_version = std::string(v);
        return Status::Ok();
      },
      [](const LogConfig& c) { return c.message_format_version; }};
}

// Kafka's ThrottledReplicaListValidator: "*", or partitionId:brokerId,...
ConfigDef ThrottledReplicasDef(const char* name, std::string LogConfig::*field) {
  return {name,
          [name, field](std::string_view v, LogConfig* c) {
            const std::string_view list = TrimValue(v);
            bool ok = true;
            if (list != "*" && !list.empty()) {
              size_t start = 0;
              while (ok && start <= list.size()) {
                size_t comma = list.find(',', start);
                if (comma == std::string_view::npos) comma = list.size();
                const std::string_view item = TrimValue(list.substr(start, comma - start));
                const size_t colon = item.find(':');
                ok = colon != std::string_view::npos && colon > 0 && colon + 1 < item.size() &&
                     item.find_first_not_of("0123456789:") == std::string_view::npos &&
                     item.find(':', colon + 1) == std::string_view::npos;
                start = comma + 1;
              }
            }
            if (!ok) {
              return Bad(name, v,
                         "expected a list of partitionId:brokerId pairs, or * for all replicas");
            }
            c->*field = std::string(list);
            return Status::Ok();
          },
          [field](const LogConfig& c) { return c.*field; }};
}

// There is no tiered storage here; Kafka refuses it the same way on a broker
// with remote.log.storage.system.enable=false.
ConfigDef RemoteStorageDef() {
  return {"remote.storage.enable",
          [](std::string_view v, LogConfig*) {
            if (v == "false") return Status::Ok();
            if (v == "true") {
              return Bad("remote.storage.enable", v,
                         "Tiered Storage functionality is disabled in the broker. Topic cannot be "
                         "configured with remote log storage.");
            }
            return Bad("remote.storage.enable", v, "expected true or false");
          },
          [](const LogConfig&) { return std::string("false"); }};
}

ConfigDef TimestampTypeDef() {
  return {"message.timestamp.type",
          [](std::string_view v, LogConfig* c) {
            if (v != "CreateTime" && v != "LogAppendTime") {
              return Bad("message.timestamp.type", v, "expected CreateTime or LogAppendTime");
            }
            c->log_append_time = v == "LogAppendTime";
            return Status::Ok();
          },
          [](const LogConfig& c) {
            return std::string(c.log_append_time ? "LogAppendTime" : "CreateTime");
          }};
}

ConfigDef MinInsyncReplicasDef() {
  return {"min.insync.replicas",
          [](std::string_view v, LogConfig*) {
            int32_t n = 0;
            DARUMA_RETURN_IF_ERROR(ParseInt<int32_t>("min.insync.replicas", v, 1, &n));
            if (n != 1)
              return Bad("min.insync.replicas", v, "a single node has one in-sync replica");
            return Status::Ok();
          },
          [](const LogConfig&) { return std::string("1"); }};
}

ConfigDef PreallocateDef() {
  return {"preallocate",
          [](std::string_view v, LogConfig* c) {
            if (v != "true" && v != "false") return Bad("preallocate", v, "expected true or false");
            c->preallocate = v == "true";
            return Status::Ok();
          },
          [](const LogConfig& c) { return std::string(c.preallocate ? "true" : "false"); }};
}

// Sorted by name, like Kafka's DescribeConfigs output.
const std::vector<ConfigDef>& Defs() {
  static const std::vector<ConfigDef> defs = [] {
    std::vector<ConfigDef> d;
    d.push_back({"cleanup.policy",
                 [](std::string_view v, LogConfig* c) {
                   return ParseCleanupPolicy("cleanup.policy", v, c);
                 },
                 RenderCleanupPolicy});
    d.push_back(RangeDef("compression.gzip.level", &LogConfig::compression_gzip_level, 1, 9));
    d.push_back(RangeDef("compression.lz4.level", &LogConfig::compression_lz4_level, 1, 17));
    d.push_back(CompressionTypeDef());
    d.push_back(
        RangeDef("compression.zstd.level", &LogConfig::compression_zstd_level, -131072, 22));
    d.push_back(IntDef<int64_t>("delete.retention.ms", &LogConfig::delete_retention_ms, 0));
    d.push_back(IntDef<int64_t>("file.delete.delay.ms", &LogConfig::file_delete_delay_ms, 0));
    d.push_back(IntDef<int64_t>("flush.messages", &LogConfig::flush_messages, 1));
    d.push_back(IntDef<int64_t>("flush.ms", &LogConfig::flush_ms, 0));
    d.push_back(ThrottledReplicasDef("follower.replication.throttled.replicas",
                                     &LogConfig::follower_replication_throttled_replicas));
    d.push_back(IntDef<int32_t>("index.interval.bytes", &LogConfig::index_interval_bytes, 0));
    d.push_back(ThrottledReplicasDef("leader.replication.throttled.replicas",
                                     &LogConfig::leader_replication_throttled_replicas));
    d.push_back(IntDef<int64_t>("local.retention.bytes", &LogConfig::local_retention_bytes, -2));
    d.push_back(IntDef<int64_t>("local.retention.ms", &LogConfig::local_retention_ms, -2));
    d.push_back(IntDef<int64_t>("max.compaction.lag.ms", &LogConfig::max_compaction_lag_ms, 1));
    d.push_back(IntDef<int32_t>("max.message.bytes", &LogConfig::max_message_bytes, 0));
    d.push_back(
        BoolDef("message.downconversion.enable", &LogConfig::message_downconversion_enable));
    d.push_back(MessageFormatVersionDef());
    d.push_back(IntDef<int64_t>("message.timestamp.after.max.ms",
                                &LogConfig::message_timestamp_after_max_ms, 0));
    d.push_back(IntDef<int64_t>("message.timestamp.before.max.ms",
                                &LogConfig::message_timestamp_before_max_ms, 0));
    d.push_back(IntDef<int64_t>("message.timestamp.difference.max.ms",
                                &LogConfig::message_timestamp_difference_max_ms, 0));
    d.push_back(TimestampTypeDef());
    d.push_back(
        {"min.cleanable.dirty.ratio",
         [](std::string_view v, LogConfig* c) {
           return ParseRatio("min.cleanable.dirty.ratio", v, &c->min_cleanable_dirty_ratio);
         },
         [](const LogConfig& c) { return fmt::format("{}", c.min_cleanable_dirty_ratio); }});
    d.push_back(IntDef<int64_t>("min.compaction.lag.ms", &LogConfig::min_compaction_lag_ms, 0));
    d.push_back(MinInsyncReplicasDef());
    d.push_back(PreallocateDef());
    d.push_back(RemoteStorageDef());
    d.push_back(IntDef<int64_t>("retention.bytes", &LogConfig::retention_bytes, -1));
    d.push_back(IntDef<int64_t>("retention.ms", &LogConfig::retention_ms, -1));
    d.push_back(IntDef<int32_t>("segment.bytes", &LogConfig::segment_bytes, 14));
    d.push_back(IntDef<int32_t>("segment.index.bytes", &LogConfig::segment_index_bytes, 4));
    d.push_back(IntDef<int64_t>("segment.jitter.ms", &LogConfig::segment_jitter_ms, 0));
    d.push_back(IntDef<int64_t>("segment.ms", &LogConfig::segment_ms, 1));
    d.push_back(
        BoolDef("unclean.leader.election.enable", &LogConfig::unclean_leader_election_enable));
    return d;
  }();
  return defs;
}

const ConfigDef* FindDef(std::string_view name) {
  for (const ConfigDef& d : Defs()) {
    if (name == d.name) return &d;
  }
  return nullptr;
}

}  // namespace

bool IsKnownTopicConfigName(std::string_view name) {
  return FindDef(name) != nullptr;
}

Status ApplyTopicConfigOverride(std::string_view name, std::string_view value, LogConfig* config) {
  const ConfigDef* def = FindDef(name);
  if (def == nullptr) return Status::InvalidArgument(fmt::format("unknown topic config {}", name));
  LogConfig copy = *config;
  DARUMA_RETURN_IF_ERROR(def->apply(value, &copy));
  *config = copy;
  return Status::Ok();
}

Result<LogConfig> ApplyTopicConfigOverrides(const LogConfig& defaults,
                                            const TopicConfigOverrides& overrides) {
  LogConfig config = defaults;
  for (const auto& [name, value] : overrides) {
    DARUMA_RETURN_IF_ERROR(ApplyTopicConfigOverride(name, value, &config));
  }
  // Kafka's LogConfig.validateValues, on the values the topic would run with.
  if (config.min_compaction_lag_ms > config.max_compaction_lag_ms) {
    return Status::InvalidArgument(
        fmt::format("conflict topic config setting min.compaction.lag.ms ({}) > "
                    "max.compaction.lag.ms ({})",
                    config.min_compaction_lag_ms, config.max_compaction_lag_ms));
  }
  return config;
}

TopicConfigOverrides DiffTopicConfig(const LogConfig& defaults, const LogConfig& config) {
  TopicConfigOverrides out;
  for (const ConfigDef& d : Defs()) {
    std::string value = d.render(config);
    if (value != d.render(defaults)) out.emplace(d.name, std::move(value));
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> RenderTopicConfigs(const LogConfig& config) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const ConfigDef& d : Defs()) out.emplace_back(d.name, d.render(config));
  return out;
}

}  // namespace daruma
