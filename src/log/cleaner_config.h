// Log cleaner settings (spec §11.6, §13), with Kafka's defaults.
//
// CleanerConfig holds the broker-wide `log.cleaner.*` settings; CompactionConfig
// the per-topic ones (`delete.retention.ms`, `min.cleanable.dirty.ratio`,
// `min.compaction.lag.ms`, `max.compaction.lag.ms`), which live in LogConfig so
// topic overrides reach them (CompactionConfigOf); whether a log is compacted
// at all is LogConfig::compact.
#pragma once

#include <cstdint>
#include <limits>

#include "log/log_config.h"

namespace daruma {

struct CleanerConfig {
  int32_t threads = 1;                     // log.cleaner.threads
  int64_t dedupe_buffer_size = 134217728;  // log.cleaner.dedupe.buffer.size (all threads)
  int64_t io_buffer_size = 524288;         // log.cleaner.io.buffer.size (all threads)
  double io_buffer_load_factor = 0.9;      // log.cleaner.io.buffer.load.factor
  double io_max_bytes_per_second =
      std::numeric_limits<double>::max();  // ...io.max.bytes.per.second
  int64_t backoff_ms = 15000;              // log.cleaner.backoff.ms
  int32_t max_message_bytes = 1048588;     // message.max.bytes (I/O buffer growth bound)

  // Kafka: min(dedupe.buffer.size / threads, 2^31 - 1) bytes per thread.
  int64_t OffsetMapBytesPerThread() const {
    const int64_t per = dedupe_buffer_size / (threads > 0 ? threads : 1);
    return per < std::numeric_limits<int32_t>::max() ? per : std::numeric_limits<int32_t>::max();
  }
};

struct CompactionConfig {
  int64_t delete_retention_ms = 86400000;                               // delete.retention.ms
  double min_cleanable_dirty_ratio = 0.5;                               // min.cleanable.dirty.ratio
  int64_t min_compaction_lag_ms = 0;                                    // min.compaction.lag.ms
  int64_t max_compaction_lag_ms = std::numeric_limits<int64_t>::max();  // max.compaction.lag.ms
};

// The compaction settings of a log's (topic's) LogConfig.
inline CompactionConfig CompactionConfigOf(const LogConfig& log) {
  return CompactionConfig{.delete_retention_ms = log.delete_retention_ms,
                          .min_cleanable_dirty_ratio = log.min_cleanable_dirty_ratio,
                          .min_compaction_lag_ms = log.min_compaction_lag_ms,
                          .max_compaction_lag_ms = log.max_compaction_lag_ms};
}

}  // namespace daruma
