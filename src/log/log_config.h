// LogConfig: the per-log settings of spec §13 that the log engine uses, with
// Kafka's defaults. Broker properties and topic overrides are resolved into
// one of these by the layer that reads configuration.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "record/compression.h"

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

  // compression.type: the codec batches are stored in (Kafka's LogValidator
  // recompresses a batch sent in another); nullopt is "producer": as sent.
  // compression.{gzip,lz4,zstd}.level: the level of that recompression
  // (gzip -1: zlib's default).
  std::optional<CompressionType> compression_type;
  int32_t compression_gzip_level = -1;
  int32_t compression_lz4_level = 9;
  int32_t compression_zstd_level = 3;

  // How far a CreateTime record's timestamp may lie before / after the
  // broker's clock at produce (INVALID_TIMESTAMP beyond).
  // message.timestamp.difference.max.ms is the older name for both, used
  // where the newer one is not set (Kafka's LogConfig).
  int64_t message_timestamp_difference_max_ms = std::numeric_limits<int64_t>::max();
  int64_t message_timestamp_before_max_ms = std::numeric_limits<int64_t>::max();
  int64_t message_timestamp_after_max_ms = std::numeric_limits<int64_t>::max();
  int64_t TimestampBeforeMaxMs() const {
    return message_timestamp_before_max_ms != std::numeric_limits<int64_t>::max()
               ? message_timestamp_before_max_ms
               : message_timestamp_difference_max_ms;
  }
  int64_t TimestampAfterMaxMs() const {
    return message_timestamp_after_max_ms != std::numeric_limits<int64_t>::max()
               ? message_timestamp_after_max_ms
               : message_timestamp_difference_max_ms;
  }

  // Kafka topic configs that change nothing on one node without tiered
  // storage or down-conversion, accepted, validated and described as Kafka
  // does so that tools setting them work (remote.storage.enable only false).
  bool unclean_leader_election_enable = false;
  bool message_downconversion_enable = true;
  std::string message_format_version = "3.0-IV1";
  std::string leader_replication_throttled_replicas;
  std::string follower_replication_throttled_replicas;
  int64_t local_retention_ms = -2;
  int64_t local_retention_bytes = -2;

  // Kafka's maxSegmentMs: how old the active segment may grow before an
  // append rolls it. A compacted topic's max.compaction.lag.ms bounds it too,
  // since the cleaner never touches the active segment: without the roll, a
  // quiet topic's records would outlive the lag by up to segment.ms.
  int64_t MaxSegmentMs() const {
    return compact && max_compaction_lag_ms > 0 ? std::min(max_compaction_lag_ms, segment_ms)
                                                : segment_ms;
  }
  // Kafka's initFileSize: segment.bytes when preallocating, else 0.
  int64_t InitFileSize() const { return preallocate ? segment_bytes : 0; }
};

}  // namespace daruma
