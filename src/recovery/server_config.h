// ServerConfig: the broker settings (`server.properties`, Kafka property names,
// spec §13) that start-up recovery and the log engine use, resolved into a
// LogConfig plus the log manager's own settings.
//
// Input: a Java .properties file (ParseJavaProperties) and then `key=value`
// overrides (the `--set` flag), later values winning. Resolution follows
// Kafka's synonyms: log.dirs over log.dir; *.ms over *.minutes over *.hours;
// log.flush.interval.ms falls back to log.flush.scheduler.interval.ms.
// Numbers and booleans are trimmed and parsed strictly (the whole value must
// parse, within Kafka's range); a bad value is kInvalidArgument naming the key,
// the value and the range in words. Keys Daruma does not use are kept
// verbatim in `other`.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "common/caching_file_system.h"
#include "common/file_system.h"
#include "common/status.h"
#include "log/cleaner_config.h"
#include "log/log_config.h"

namespace daruma {

using PropertyMap = std::map<std::string, std::string>;

struct ServerConfig {
  // log.dirs, else log.dir; empty when neither is set (Kafka would then use
  // /tmp/kafka-logs, which a recovery tool must not guess).
  std::vector<std::string> log_dirs;
  LogConfig log;                                        // the broker-level topic defaults
  int32_t num_recovery_threads_per_data_dir = 1;        // num.recovery.threads.per.data.dir
  int64_t log_flush_scheduler_interval_ms = INT64_MAX;  // log.flush.scheduler.interval.ms
  int64_t log_flush_offset_checkpoint_interval_ms =
      60000;  // log.flush.offset.checkpoint.interval.ms
  int64_t log_flush_start_offset_checkpoint_interval_ms =
      60000;  // log.flush.start.offset.checkpoint.interval.ms
  int64_t log_retention_check_interval_ms = 300000;  // log.retention.check.interval.ms
  int64_t log_initial_task_delay_ms = 30000;         // log.initial.task.delay.ms (internal)
  int32_t background_threads = 10;                   // background.threads
  int64_t replica_high_watermark_checkpoint_interval_ms =
      5000;  // replica.high.watermark.checkpoint.interval.ms
  // Beyond Kafka: how often recovery points moved by flushes are checkpointed
  // (daruma.recovery.point.checkpoint.tick.ms).
  int64_t recovery_point_checkpoint_tick_ms = 1000;
  // Beyond Kafka: at most this many segment and index files open at once
  // (daruma.max.open.files; LogManagerOptions::max_open_files). Default: half
  // of the RLIMIT_NOFILE soft limit, at least 64; 0 keeps every file open.
  int64_t max_open_files = int64_t(DefaultMaxOpenFiles());
  bool log_cleaner_enable = true;  // log.cleaner.enable
  // log.cleaner.{threads, dedupe.buffer.size, io.buffer.size, io.buffer.load.factor,
  // io.max.bytes.per.second, backoff.ms}, message.max.bytes. The per-topic
  // log.cleaner.{delete.retention.ms, min.cleanable.ratio, min.compaction.lag.ms,
  // max.compaction.lag.ms} defaults go into `log`.
  CleanerConfig cleaner;
  PropertyMap other;  // every key not listed above, as given
  // Every key as given (the file, then each --set): what DescribeConfigs
  // reports as STATIC_BROKER_CONFIG, by the name the operator used.
  PropertyMap given;
  // One line per key of the --config file that is neither Daruma's nor
  // Kafka's (recovery/config_keys.h): "<file>:<line>: unknown key ...".
  // Each command prints them on stderr; the keys are ignored.
  std::vector<std::string> warnings;

  // Resolves `props` (the final key -> value map after overrides).
  static Result<ServerConfig> FromProperties(const PropertyMap& props);
  // Every key FromProperties reads (the rest end up in `other`).
  static std::vector<std::string> KeysRead();
};

// Reads a server.properties file. kNotFound / kIoError naming the path;
// kCorruption for malformed escapes.
Result<PropertyMap> ReadPropertiesFile(const std::string& path,
                                       FileSystem* fs = FileSystem::Default());

// The command-line path shared by every subcommand: reads `config_file` (none
// when empty), applies each `--set key=value` in order, then resolves. Errors
// name the file, the override or the key. A key no Kafka broker or Daruma
// knows (recovery/config_keys.h) is a warning in the file (a real
// server.properties may carry a newer Kafka's keys) and kInvalidArgument in a
// --set (typed just now, so a typo), naming the nearest known key either way.
Result<ServerConfig> LoadServerConfig(const std::string& config_file,
                                      const std::vector<std::string>& overrides);

// Applies one "key=value" override (the first '=' splits; the key is trimmed and
// must not be empty). kInvalidArgument quoting the text otherwise.
Status ApplyPropertyOverride(std::string_view key_equals_value, PropertyMap* props);

}  // namespace daruma
