// CleanShutdownFile: the clean-shutdown marker `.kafka_cleanshutdown` at the
// root of a log directory (spec §9.4).
//
// Format (Kafka >= 3.7): the JSON object {"version":0,"brokerEpoch":<int64>},
// no newline. Kafka < 3.7 wrote an empty file. The file's EXISTENCE alone
// means "the last shutdown was clean"; its content only carries the broker
// epoch, which is unknown when the file is empty or unparsable (unknown JSON
// fields are ignored).
//
// Durability: Write() is a plain in-place write + fsync (no temp file, as
// Kafka), then an fsync of the directory so the new entry survives a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "common/file_system.h"
#include "common/status.h"

namespace daruma {

inline constexpr char kCleanShutdownFileName[] = ".kafka_cleanshutdown";

class CleanShutdownFile {
 public:
  static constexpr int32_t kVersion = 0;

  // `log_dir` is the log directory holding the marker.
  explicit CleanShutdownFile(const std::string& log_dir, FileSystem* fs = FileSystem::Default());

  bool Exists() const { return fs_->Exists(path_); }
  // kNotFound when the marker is missing; std::nullopt when it exists but its
  // broker epoch cannot be read.
  Result<std::optional<int64_t>> ReadBrokerEpoch() const;
  Status Write(int64_t broker_epoch) const;
  // Removes the marker; a missing marker is not an error.
  Status Remove() const;
  const std::string& path() const { return path_; }

  static std::string Serialize(int64_t broker_epoch);
  static std::optional<int64_t> ParseBrokerEpoch(std::string_view content);

 private:
  std::string path_;
  FileSystem* fs_;
};

}  // namespace daruma
