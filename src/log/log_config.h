// LogConfig: the per-log settings of spec §13 that the log engine uses, with
// Kafka's defaults. Broker properties and topic overrides are resolved into
// one of these by the layer that reads configuration.
#pragma once

#include <cstdint>
#include <limits>

namespace daruma {

struct LogConfig {
  int32_t segment_bytes = 1073741824;                            // segment.bytes
  int64_t segment_ms = 604800000;                                // segment.ms (7 days)
  int64_t segment_jitter_ms = 0;                                 // segment.jitter.ms
  int32_t segment_index_bytes = 10485760;                        // segment.index.bytes
  int32_t index_interval_bytes = 4096;                           // index.interval.bytes
  bool preallocate = false;                                      // preallocate
  int32_t max_message_bytes = 1048588;                           // max.message.bytes
  int64_t file_delete_delay_ms = 60000;                          // file.delete.delay.ms
  int64_t retention_ms = 604800000;                              // retention.ms (-1 unlimited)
  int64_t retention_bytes = -1;                                  // retention.bytes
  int64_t flush_messages = std::numeric_limits<int64_t>::max();  // flush.messages
  int64_t flush_ms = std::numeric_limits<int64_t>::max();        // flush.ms
  bool compact = false;                                          // cleanup.policy contains compact
  bool delete_policy = true;                                     // cleanup.policy contains delete
  bool log_append_time = false;  // message.timestamp.type=LogAppendTime
  int64_t producer_id_expiration_ms = 86400000;
  // Compaction (read by the log cleaner through CompactionConfigOf, cleaner_config.h).
  int64_t delete_retention_ms = 86400000;                               // delete.retention.ms
  double min_cleanable_dirty_ratio = 0.5;                               // min.cleanable.dirty.ratio
  int64_t min_compaction_lag_ms = 0;                                    // min.compaction.lag.ms
  int64_t max_compaction_lag_ms = std::numeric_limits<int64_t>::max();  // max.compaction.lag.ms

  // Kafka's initFileSize: segment.bytes when preallocating, else 0.
  int64_t InitFileSize() const { return preallocate ? segment_bytes : 0; }
};

}  // namespace daruma
