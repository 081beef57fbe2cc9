#include "recovery/server_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <limits>
#include <optional>
#include <set>

#include "common/bytes.h"
#include "log/meta_properties.h"
#include "log/topic_config_overrides.h"
#include "recovery/config_keys.h"

namespace daruma {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return out;
}

// "expected a whole number from 1 to 2147483647"; an open upper end is left
// out rather than printed as a 19-digit number.
std::string RangeInWords(int64_t min, int64_t max) {
  if (max == std::numeric_limits<int64_t>::max()) {
    return fmt::format("expected a whole number of at least {}", min);
  }
  return fmt::format("expected a whole number from {} to {}", min, max);
}

// Reads typed values out of the property map, remembering which keys it used
// so the rest can be kept in ServerConfig::other.
class Resolver {
 public:
  explicit Resolver(const PropertyMap& props) : props_(props) {}

  std::optional<std::string_view> Raw(const std::string& key) {
    used_.insert(key);
    auto it = props_.find(key);
    if (it == props_.end()) return std::nullopt;
    return std::string_view(it->second);
  }

  Result<std::optional<int64_t>> Long(const std::string& key, int64_t min, int64_t max) {
    auto raw = Raw(key);
    if (!raw) return std::optional<int64_t>();
    const std::string_view text = Trim(*raw);
    int64_t value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
      return Bad(key, *raw, "expected an integer");
    }
    if (value < min || value > max) return Bad(key, *raw, RangeInWords(min, max));
    return std::optional<int64_t>(value);
  }

  // Sets *out when the key is present.
  template <typename T>
  Status Set(const std::string& key, T* out, int64_t min = std::numeric_limits<T>::min(),
             int64_t max = std::numeric_limits<T>::max()) {
    DARUMA_ASSIGN_OR_RETURN(std::optional<int64_t> v, Long(key, min, max));
    if (v) *out = T(*v);
    return Status::Ok();
  }

  Status SetDouble(const std::string& key, double* out, double min, double max) {
    auto raw = Raw(key);
    if (!raw) return Status::Ok();
    const std::string_view text = Trim(*raw);
    double value = 0;
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size()) {
      return Bad(key, *raw, "expected a number");
    }
    if (!(value >= min && value <= max)) {
      return Bad(key, *raw,
                 max == std::numeric_limits<double>::max()
                     ? fmt::format("expected a number of at least {}", min)
                     : fmt::format("expected a number from {} to {}", min, max));
    }
    *out = value;
    return Status::Ok();
  }

  Status SetBool(const std::string& key, bool* out) {
    auto raw = Raw(key);
    if (!raw) return Status::Ok();
    const std::string value = Lower(Trim(*raw));
    if (value != "true" && value != "false") return Bad(key, *raw, "expected true or false");
    *out = value == "true";
    return Status::Ok();
  }

  // The first present key of `keys_by_precedence`, scaled to milliseconds.
  // `min` is -1 where -1 means "unlimited", else 0.
  Status SetMsSynonyms(const std::vector<std::pair<std::string, int64_t>>& keys_by_precedence,
                       int64_t min, int64_t* out) {
    for (const auto& [key, scale] : keys_by_precedence) {
      const int64_t max = std::numeric_limits<int64_t>::max() / scale;
      DARUMA_ASSIGN_OR_RETURN(std::optional<int64_t> v, Long(key, min, max));
      if (v) {
        *out = *v < 0 ? -1 : *v * scale;
        break;  // the rest are still marked used: they are known synonyms
      }
    }
    for (const auto& [key, scale] : keys_by_precedence) used_.insert(key);
    return Status::Ok();
  }

  const std::set<std::string>& used() const { return used_; }

  PropertyMap Unused() const {
    PropertyMap out;
    for (const auto& [k, v] : props_) {
      if (!used_.count(k)) out.emplace(k, v);
    }
    return out;
  }

  static Status Bad(const std::string& key, std::string_view value, const std::string& why) {
    return Status::InvalidArgument("invalid value \"" + std::string(value) + "\" for " + key +
                                   ": " + why);
  }

 private:
  const PropertyMap& props_;
  std::set<std::string> used_;
};

std::vector<std::string> SplitList(std::string_view text) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string_view::npos) comma = text.size();
    std::string_view item = Trim(text.substr(pos, comma - pos));
    if (!item.empty()) out.emplace_back(item);
    pos = comma + 1;
  }
  return out;
}

Status ResolveLogDirs(Resolver& r, ServerConfig* c) {
  auto dirs = r.Raw("log.dirs");
  auto dir = r.Raw("log.dir");
  if (dirs) {
    c->log_dirs = SplitList(*dirs);
    if (c->log_dirs.empty()) return Resolver::Bad("log.dirs", *dirs, "expected a directory list");
  } else if (dir) {
    c->log_dirs = SplitList(*dir);
    if (c->log_dirs.empty()) return Resolver::Bad("log.dir", *dir, "expected a directory");
  }
  return Status::Ok();
}

Status ResolveCleanupPolicy(Resolver& r, LogConfig* log) {
  auto raw = r.Raw("log.cleanup.policy");
  if (!raw) return Status::Ok();
  log->compact = false;
  log->delete_policy = false;
  for (const std::string& item : SplitList(*raw)) {
    const std::string policy = Lower(item);
    if (policy == "compact") {
      log->compact = true;
    } else if (policy == "delete") {
      log->delete_policy = true;
    } else {
      return Resolver::Bad("log.cleanup.policy", *raw, "expected a list of delete, compact");
    }
  }
  return Status::Ok();
}

Status ResolveTimestampType(Resolver& r, LogConfig* log) {
  auto raw = r.Raw("log.message.timestamp.type");
  if (!raw) return Status::Ok();
  const std::string_view value = Trim(*raw);
  if (value != "CreateTime" && value != "LogAppendTime") {
    return Resolver::Bad("log.message.timestamp.type", *raw,
                         "expected CreateTime or LogAppendTime");
  }
  log->log_append_time = value == "LogAppendTime";
  return Status::Ok();
}

// Broker defaults of topic configs that read as the topic config does
// (log/topic_config_overrides.h validates and applies them).
Status ResolveTopicDefaults(Resolver& r, LogConfig* log) {
  static constexpr std::pair<const char*, const char*> kKeys[] = {
      {"compression.type", "compression.type"},
      {"compression.gzip.level", "compression.gzip.level"},
      {"compression.lz4.level", "compression.lz4.level"},
      {"compression.zstd.level", "compression.zstd.level"},
      {"log.message.timestamp.difference.max.ms", "message.timestamp.difference.max.ms"},
      {"log.message.timestamp.before.max.ms", "message.timestamp.before.max.ms"},
      {"log.message.timestamp.after.max.ms", "message.timestamp.after.max.ms"},
      {"unclean.leader.election.enable", "unclean.leader.election.enable"},
      {"log.message.downconversion.enable", "message.downconversion.enable"},
      {"log.message.format.version", "message.format.version"},
      {"log.local.retention.ms", "local.retention.ms"},
      {"log.local.retention.bytes", "local.retention.bytes"},
  };
  for (const auto& [key, topic_key] : kKeys) {
    auto raw = r.Raw(key);
    if (!raw) continue;
    Status st = ApplyTopicConfigOverride(topic_key, Trim(*raw), log);
    if (!st.ok()) return Status::InvalidArgument(fmt::format("{}: {}", key, st.message()));
  }
  return Status::Ok();
}

Status ResolveLogConfig(Resolver& r, ServerConfig* c) {
  LogConfig& log = c->log;
  constexpr int64_t kHour = 3600000, kMinute = 60000;
  DARUMA_RETURN_IF_ERROR(r.Set("log.segment.bytes", &log.segment_bytes, 14));
  DARUMA_RETURN_IF_ERROR(
      r.SetMsSynonyms({{"log.roll.ms", 1}, {"log.roll.hours", kHour}}, 1, &log.segment_ms));
  DARUMA_RETURN_IF_ERROR(r.SetMsSynonyms(
      {{"log.roll.jitter.ms", 1}, {"log.roll.jitter.hours", kHour}}, 0, &log.segment_jitter_ms));
  DARUMA_RETURN_IF_ERROR(r.Set("log.index.size.max.bytes", &log.segment_index_bytes, 4));
  DARUMA_RETURN_IF_ERROR(r.Set("log.index.interval.bytes", &log.index_interval_bytes, 0));
  DARUMA_RETURN_IF_ERROR(r.SetBool("log.preallocate", &log.preallocate));
  DARUMA_RETURN_IF_ERROR(r.Set("message.max.bytes", &log.max_message_bytes, 0));
  DARUMA_RETURN_IF_ERROR(r.Set("log.segment.delete.delay.ms", &log.file_delete_delay_ms, 0));
  DARUMA_RETURN_IF_ERROR(r.SetMsSynonyms(
      {{"log.retention.ms", 1}, {"log.retention.minutes", kMinute}, {"log.retention.hours", kHour}},
      -1, &log.retention_ms));
  DARUMA_RETURN_IF_ERROR(r.Set("log.retention.bytes", &log.retention_bytes));
  DARUMA_RETURN_IF_ERROR(ResolveCleanupPolicy(r, &log));
  DARUMA_RETURN_IF_ERROR(r.Set("log.flush.interval.messages", &log.flush_messages, 1));
  DARUMA_RETURN_IF_ERROR(ResolveTimestampType(r, &log));
  DARUMA_RETURN_IF_ERROR(ResolveTopicDefaults(r, &log));
  DARUMA_RETURN_IF_ERROR(r.Set("producer.id.expiration.ms", &log.producer_id_expiration_ms, 1,
                               std::numeric_limits<int32_t>::max()));
  // log.flush.interval.ms defaults to the scheduler interval (Kafka's synonym rule).
  DARUMA_RETURN_IF_ERROR(
      r.Set("log.flush.scheduler.interval.ms", &c->log_flush_scheduler_interval_ms, 0));
  log.flush_ms = c->log_flush_scheduler_interval_ms;
  return r.Set("log.flush.interval.ms", &log.flush_ms, 0);
}

// Kafka's log.cleaner.* settings: the broker-wide ones into `cleaner`, the
// per-topic defaults into `log`.
Status ResolveCleanerSettings(Resolver& r, ServerConfig* c) {
  CleanerConfig& cl = c->cleaner;
  LogConfig& log = c->log;
  DARUMA_RETURN_IF_ERROR(r.SetBool("log.cleaner.enable", &c->log_cleaner_enable));
  DARUMA_RETURN_IF_ERROR(r.Set("log.cleaner.threads", &cl.threads, 0));
  DARUMA_RETURN_IF_ERROR(r.Set("log.cleaner.dedupe.buffer.size", &cl.dedupe_buffer_size, 0));
  DARUMA_RETURN_IF_ERROR(r.Set("log.cleaner.io.buffer.size", &cl.io_buffer_size, 0));
  DARUMA_RETURN_IF_ERROR(
      r.SetDouble("log.cleaner.io.buffer.load.factor", &cl.io_buffer_load_factor, 0, 1));
  DARUMA_RETURN_IF_ERROR(r.SetDouble("log.cleaner.io.max.bytes.per.second",
                                     &cl.io_max_bytes_per_second, 0,
                                     std::numeric_limits<double>::max()));
  DARUMA_RETURN_IF_ERROR(r.Set("log.cleaner.backoff.ms", &cl.backoff_ms, 0));
  cl.max_message_bytes = log.max_message_bytes;
  DARUMA_RETURN_IF_ERROR(r.Set("log.cleaner.delete.retention.ms", &log.delete_retention_ms, 0));
  DARUMA_RETURN_IF_ERROR(
      r.SetDouble("log.cleaner.min.cleanable.ratio", &log.min_cleanable_dirty_ratio, 0, 1));
  DARUMA_RETURN_IF_ERROR(r.Set("log.cleaner.min.compaction.lag.ms", &log.min_compaction_lag_ms, 0));
  DARUMA_RETURN_IF_ERROR(r.Set("log.cleaner.max.compaction.lag.ms", &log.max_compaction_lag_ms, 1));
  // Kafka's validateBrokerLogConfigValues refuses to start with them: every
  // topic's config would fail LogConfig.validateValues.
  if (log.min_compaction_lag_ms > log.max_compaction_lag_ms) {
    return Status::InvalidArgument(
        fmt::format("conflicting settings: log.cleaner.min.compaction.lag.ms ({}) > "
                    "log.cleaner.max.compaction.lag.ms ({})",
                    log.min_compaction_lag_ms, log.max_compaction_lag_ms));
  }
  return Status::Ok();
}

Status ResolveManagerSettings(Resolver& r, ServerConfig* c) {
  DARUMA_RETURN_IF_ERROR(
      r.Set("num.recovery.threads.per.data.dir", &c->num_recovery_threads_per_data_dir, 1));
  DARUMA_RETURN_IF_ERROR(r.Set("log.flush.offset.checkpoint.interval.ms",
                               &c->log_flush_offset_checkpoint_interval_ms, 0));
  DARUMA_RETURN_IF_ERROR(r.Set("log.flush.start.offset.checkpoint.interval.ms",
                               &c->log_flush_start_offset_checkpoint_interval_ms, 0));
  DARUMA_RETURN_IF_ERROR(r.Set("log.initial.task.delay.ms", &c->log_initial_task_delay_ms, 0));
  DARUMA_RETURN_IF_ERROR(r.Set("background.threads", &c->background_threads, 1));
  DARUMA_RETURN_IF_ERROR(r.Set("replica.high.watermark.checkpoint.interval.ms",
                               &c->replica_high_watermark_checkpoint_interval_ms, 1));
  DARUMA_RETURN_IF_ERROR(
      r.Set("daruma.recovery.point.checkpoint.tick.ms", &c->recovery_point_checkpoint_tick_ms, 1));
  DARUMA_RETURN_IF_ERROR(
      r.Set("daruma.max.open.files", &c->max_open_files, 0, std::numeric_limits<int32_t>::max()));
  return r.Set("log.retention.check.interval.ms", &c->log_retention_check_interval_ms, 1);
}

Status Resolve(Resolver& r, ServerConfig* config) {
  DARUMA_RETURN_IF_ERROR(ResolveLogDirs(r, config));
  DARUMA_RETURN_IF_ERROR(ResolveLogConfig(r, config));
  DARUMA_RETURN_IF_ERROR(ResolveManagerSettings(r, config));
  return ResolveCleanerSettings(r, config);
}

// The 1-based line of `text` where `key` is set, or 0. A Java properties key
// ends at the first unescaped '=', ':' or blank; keys with escapes or on
// continued lines are not found, and the warning then names the file alone.
int LineOf(std::string_view text, std::string_view key) {
  int line = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    ++line;
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view l = Trim(text.substr(pos, end - pos));
    if (l.starts_with(key)) {
      const std::string_view rest = l.substr(key.size());
      if (rest.empty() || rest[0] == '=' || rest[0] == ':' ||
          std::isspace(static_cast<unsigned char>(rest[0]))) {
        return line;
      }
    }
    pos = end + 1;
  }
  return 0;
}

}  // namespace

Result<ServerConfig> ServerConfig::FromProperties(const PropertyMap& props) {
  ServerConfig config;
  Resolver r(props);
  DARUMA_RETURN_IF_ERROR(Resolve(r, &config));
  config.other = r.Unused();
  config.given = props;
  return config;
}

std::vector<std::string> ServerConfig::KeysRead() {
  const PropertyMap none;
  Resolver r(none);
  ServerConfig config;
  (void)Resolve(r, &config);
  return {r.used().begin(), r.used().end()};
}

Result<PropertyMap> ReadPropertiesFile(const std::string& path, FileSystem* fs) {
  DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, fs->ReadFile(path));
  return ParseJavaProperties(AsStringView(bytes), path);
}

Status ApplyPropertyOverride(std::string_view key_equals_value, PropertyMap* props) {
  const size_t eq = key_equals_value.find('=');
  const std::string_view key =
      eq == std::string_view::npos ? std::string_view() : Trim(key_equals_value.substr(0, eq));
  if (key.empty()) {
    return Status::InvalidArgument("expected key=value, found \"" + std::string(key_equals_value) +
                                   "\"");
  }
  (*props)[std::string(key)] = std::string(key_equals_value.substr(eq + 1));
  return Status::Ok();
}

Result<ServerConfig> LoadServerConfig(const std::string& config_file,
                                      const std::vector<std::string>& overrides) {
  PropertyMap props;
  std::vector<std::string> warnings;
  if (!config_file.empty()) {
    DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes,
                            FileSystem::Default()->ReadFile(config_file));
    const std::string_view text = AsStringView(bytes);
    DARUMA_ASSIGN_OR_RETURN(props, ParseJavaProperties(text, config_file));
    for (const auto& [key, value] : props) {
      if (IsKnownConfigKey(key)) continue;
      const int line = LineOf(text, key);
      warnings.push_back(fmt::format("{}{}: {}; ignored", config_file,
                                     line > 0 ? ":" + std::to_string(line) : "",
                                     UnknownConfigKeyMessage(key)));
    }
  }
  for (const std::string& kv : overrides) {
    DARUMA_RETURN_IF_ERROR(ApplyPropertyOverride(kv, &props).WithContext("--set"));
    const std::string key(Trim(kv.substr(0, kv.find('='))));
    if (!IsKnownConfigKey(key)) {
      return Status::InvalidArgument("--set " + kv + ": " + UnknownConfigKeyMessage(key));
    }
  }
  DARUMA_ASSIGN_OR_RETURN(ServerConfig config, ServerConfig::FromProperties(props));
  config.warnings = std::move(warnings);
  return config;
}

}  // namespace daruma
