// PartitionMetadataFile: `partition.metadata` in a partition directory
// (spec §9.6, Kafka >= 2.8). Exactly two lines, no trailing newline:
//
//   version: 0
//   topic_id: <22-character base64url topic id>
//
// Parsing follows Kafka: each line is split on the regex `:\s+` and must give
// exactly two fields (the key text is not checked); the version must be an
// int >= 0; the topic id must be a valid, non-zero Uuid. Any failure is
// kCorruption naming the file and the line.
//
// Durability: Write() uses WriteFileAtomically (partition.metadata.tmp, §9.2).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "common/file_system.h"
#include "common/status.h"
#include "log/uuid.h"

namespace daruma {

inline constexpr char kPartitionMetadataFileName[] = "partition.metadata";

struct PartitionMetadata {
  int32_t version = 0;
  Uuid topic_id;
};

class PartitionMetadataFile {
 public:
  static constexpr int32_t kCurrentVersion = 0;

  explicit PartitionMetadataFile(std::string path, FileSystem* fs = FileSystem::Default())
      : path_(std::move(path)), fs_(fs) {}

  bool Exists() const { return fs_->Exists(path_); }
  // kNotFound when the file is missing.
  Result<PartitionMetadata> Read() const;
  Status Write(const Uuid& topic_id) const;
  const std::string& path() const { return path_; }

  // The codec, for tools and tests. `path` only names the file in errors.
  static Result<PartitionMetadata> Parse(std::string_view content, const std::string& path);
  static std::string Serialize(const Uuid& topic_id);

 private:
  std::string path_;
  FileSystem* fs_;
};

}  // namespace daruma
