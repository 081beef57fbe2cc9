// TopicPartition and partition-directory names (spec §8.1).
//
// Directory name forms inside a log directory:
//   <topic>-<partition>                    live log
//   <topic>-<partition>.<uuid>-delete      scheduled for deletion (length-capped)
//   <topic>-<partition>.<uuid>-future      future replica (not capped)
//   <topic>-<partition>.<uuid>-stray       stray replica (length-capped)
// where <uuid> is 32 lowercase hex digits. Parsing follows Kafka: a suffixed
// name must match ^(\S+)-(\S+)\.(\S+)<suffix>$ and loses everything from its
// LAST '.'; the remainder splits at its LAST '-' into a non-empty topic and an
// int32 partition.
//
// Daruma is stricter than Kafka in ways no Kafka-created name can hit, so a
// parsed name can never escape the log directory: the topic must use only
// Kafka's legal characters [a-zA-Z0-9._-] and not be "." or "..", and the
// partition must be plain decimal digits (no sign).
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "common/status.h"

namespace daruma {

struct TopicPartition {
  std::string topic;
  int32_t partition = 0;

  bool operator==(const TopicPartition&) const = default;
  auto operator<=>(const TopicPartition&) const = default;
  // "topic-partition", which is also the live directory name.
  std::string ToString() const { return topic + "-" + std::to_string(partition); }
};

struct TopicPartitionHash {
  size_t operator()(const TopicPartition& tp) const {
    return std::hash<std::string>()(tp.topic) * 31 + std::hash<int32_t>()(tp.partition);
  }
};

inline constexpr size_t kMaxTopicNameLength = 249;

// Kafka's topic name rule: 1..249 characters of [a-zA-Z0-9._-], not "." or "..".
// kInvalidArgument naming the topic and the offending character otherwise.
Status ValidateTopicName(std::string_view topic);

enum class DirKind { kLive, kDelete, kFuture, kStray };

struct PartitionDirName {
  TopicPartition tp;
  DirKind kind = DirKind::kLive;
  std::string unique_id;  // the <uuid> part; empty for kLive
};

// Parses a directory base name (not a path). kInvalidArgument naming the
// directory when it is not one of the forms above.
Result<PartitionDirName> ParseTopicPartitionDirName(std::string_view name);

// Live directory name: "<topic>-<partition>".
std::string LogDirName(const TopicPartition& tp);
// "<topic>-<partition>.<unique_id>-delete" with the topic cut so the whole name
// is at most 255 characters. `unique_id` is normally Uuid::Random().ToHex().
std::string DeleteDirName(const TopicPartition& tp, std::string_view unique_id);
// "<topic>-<partition>.<unique_id>-future" (never cut).
std::string FutureDirName(const TopicPartition& tp, std::string_view unique_id);
// "<topic>-<partition>.<unique_id>-stray", cut like DeleteDirName.
std::string StrayDirName(const TopicPartition& tp, std::string_view unique_id);

}  // namespace daruma
