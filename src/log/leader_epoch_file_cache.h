// LeaderEpochFileCache: the ordered map leader epoch -> first offset of that
// epoch, persisted in the partition's `leader-epoch-checkpoint` (spec §9.5, §10.7).
//
// Format: the text checkpoint of checkpoint_text.h, version 0, entries
// "<epoch> <startOffset>" (int32, int64) in ascending epoch order.
//
// Invariants (kept by Assign): epochs and start offsets both strictly increase.
// Durability: Assign() rewrites the checkpoint synchronously when it changes
// the cache. Truncations only change memory and mark the cache dirty (Kafka
// flushes them asynchronously); Flush() writes the checkpoint. Every write goes
// through FileSystem::WriteFileAtomically. Not thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"

namespace daruma {

inline constexpr char kLeaderEpochCheckpointFileName[] = "leader-epoch-checkpoint";
inline constexpr int32_t kUndefinedEpoch = -1;
inline constexpr int64_t kUndefinedEpochOffset = -1;

using EpochEntry = std::pair<int32_t, int64_t>;  // (epoch, start offset)

class LeaderEpochFileCache {
 public:
  static constexpr int32_t kVersion = 0;

  // Reads `path` (creating an empty file when missing, and then setting
  // *was_missing) and applies the Assign rule to every entry in file order,
  // without rewriting the file.
  static Result<LeaderEpochFileCache> Open(const std::string& path,
                                           FileSystem* fs = FileSystem::Default(),
                                           bool* was_missing = nullptr);

  // §10.7 assign. kInvalidArgument if epoch or start_offset is negative. A
  // no-op when the latest entry has the same epoch and a start offset <= the
  // new one; otherwise drops conflicting entries from the end, inserts, and
  // rewrites the checkpoint.
  Status Assign(int32_t epoch, int64_t start_offset);

  std::optional<int32_t> LatestEpoch() const;
  std::optional<EpochEntry> LatestEntry() const;
  // Kafka's endOffsetFor: for the latest epoch (latest, log_end_offset); for an
  // epoch with a higher known epoch, (largest known epoch <= requested, start of
  // the next higher epoch) -- or (requested, first start offset) when requested
  // is below every known epoch; otherwise (-1, -1).
  EpochEntry EndOffsetFor(int32_t requested_epoch, int64_t log_end_offset) const;

  // Removes entries with start offset >= end_offset, if the latest one is such.
  // Returns true if anything was removed (the cache is then dirty).
  bool TruncateFromEnd(int64_t end_offset);
  // Removes entries with start offset <= start_offset and re-inserts the last
  // removed epoch at start_offset. Returns true if anything changed.
  bool TruncateFromStart(int64_t start_offset);
  // Writes the checkpoint if truncations left it stale.
  Status Flush();
  // Drops every entry and writes the (empty) checkpoint.
  Status ClearAndFlush();

  std::vector<EpochEntry> entries() const;
  bool dirty() const { return dirty_; }
  const std::string& path() const { return path_; }

  // The codec, for tools and tests. `path` only names the file in errors.
  static Result<std::vector<EpochEntry>> Parse(std::string_view content, const std::string& path);
  static std::string Serialize(const std::vector<EpochEntry>& entries);

 private:
  LeaderEpochFileCache(std::string path, FileSystem* fs) : path_(std::move(path)), fs_(fs) {}
  // The in-memory part of Assign; returns whether the cache changed.
  bool AssignInMemory(int32_t epoch, int64_t start_offset);
  Status WriteCheckpoint();

  std::string path_;
  FileSystem* fs_;
  std::map<int32_t, int64_t> epochs_;
  bool dirty_ = false;
  // The file holds lines Open dropped (the monotonicity rule of §10.7), so it
  // differs from epochs_ even before any change.
  bool file_has_dropped_lines_ = false;
};

}  // namespace daruma
