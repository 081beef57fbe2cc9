// OffsetCheckpointFile: the per-log-directory offset checkpoints
// `recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`,
// `replication-offset-checkpoint` and `cleaner-offset-checkpoint` (spec §9.3).
//
// Format: the text checkpoint of checkpoint_text.h, version 0, one entry line
// "<topic> <partition> <offset>" per partition. Kafka writes entries in hash
// order; Daruma writes them sorted by (topic, partition) so output is
// deterministic. When a partition appears twice on reading, the later line wins.
//
// Durability: Write() uses FileSystem::WriteFileAtomically (temp file, fsync,
// rename, fsync dir, §9.2), so a crash leaves the old or the new content.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "common/file_system.h"
#include "common/status.h"
#include "log/topic_partition.h"

namespace daruma {

using OffsetMap = std::map<TopicPartition, int64_t>;

class OffsetCheckpointFile {
 public:
  static constexpr int32_t kVersion = 0;

  // Like Kafka's checkpoint handle, creates an empty file if `path` is missing
  // (an existing file is not opened for writing).
  static Result<OffsetCheckpointFile> Open(const std::string& path,
                                           FileSystem* fs = FileSystem::Default());

  // With `text`, also the file's bytes as read (LogDirs keeps them to leave
  // a checkpoint that would not change as found).
  Result<OffsetMap> Read(std::string* text = nullptr) const;
  Status Write(const OffsetMap& offsets) const;
  // Writes `text`, which Serialize gave (for a caller that keeps the text).
  Status WriteSerialized(std::string_view text) const;
  const std::string& path() const { return path_; }

  // The codec, for tools and tests. `path` only names the file in errors.
  static Result<OffsetMap> Parse(std::string_view content, const std::string& path);
  static std::string Serialize(const OffsetMap& offsets);

 private:
  OffsetCheckpointFile(std::string path, FileSystem* fs) : path_(std::move(path)), fs_(fs) {}

  std::string path_;
  FileSystem* fs_;
};

// Creates `path` as an empty file when it does not exist (shared by the
// checkpoint handles).
Status CreateEmptyFileIfMissing(FileSystem* fs, const std::string& path);

}  // namespace daruma
