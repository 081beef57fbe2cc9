#include "log/topic_config_overrides.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdint>
#include <functional>

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
  size_t start = 0;
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
          [](std::string_view v, LogConfig*) {
            for (const char* ok : {"producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"}) {
              if (v == ok) return Status::Ok();
            }
            return Bad("compression.type", v,
                       "expected one of uncompressed, zstd, lz4, snappy, gzip, producer");
          },
          [](const LogConfig&) { return std::string("producer"); }};
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
    d.push_back(CompressionTypeDef());
    d.push_back(IntDef<int64_t>("delete.retention.ms", &LogConfig::delete_retention_ms, 0));
    d.push_back(IntDef<int64_t>("file.delete.delay.ms", &LogConfig::file_delete_delay_ms, 0));
    d.push_back(IntDef<int64_t>("flush.messages", &LogConfig::flush_messages, 1));
    d.push_back(IntDef<int64_t>("flush.ms", &LogConfig::flush_ms, 0));
    d.push_back(IntDef<int32_t>("index.interval.bytes", &LogConfig::index_interval_bytes, 0));
    d.push_back(IntDef<int64_t>("max.compaction.lag.ms", &LogConfig::max_compaction_lag_ms, 1));
    d.push_back(IntDef<int32_t>("max.message.bytes", &LogConfig::max_message_bytes, 0));
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
    d.push_back(IntDef<int64_t>("retention.bytes", &LogConfig::retention_bytes, -1));
    d.push_back(IntDef<int64_t>("retention.ms", &LogConfig::retention_ms, -1));
    d.push_back(IntDef<int32_t>("segment.bytes", &LogConfig::segment_bytes, 14));
    d.push_back(IntDef<int32_t>("segment.index.bytes", &LogConfig::segment_index_bytes, 4));
    d.push_back(IntDef<int64_t>("segment.jitter.ms", &LogConfig::segment_jitter_ms, 0));
    d.push_back(IntDef<int64_t>("segment.ms", &LogConfig::segment_ms, 1));
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
