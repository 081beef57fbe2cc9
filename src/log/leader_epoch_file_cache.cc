#include "log/leader_epoch_file_cache.h"

#include "common/bytes.h"
#include "log/checkpoint_text.h"
#include "log/offset_checkpoint_file.h"

namespace daruma {

Result<std::vector<EpochEntry>> LeaderEpochFileCache::Parse(std::string_view content,
                                                            const std::string& path) {
  std::vector<EpochEntry> entries;
  Status st = ParseTextCheckpoint(content, kVersion, path,
                                  [&entries](const std::vector<std::string_view>& fields) {
                                    if (fields.size() != 2) return false;
                                    std::optional<int32_t> epoch = ParseJavaInt(fields[0]);
                                    std::optional<int64_t> offset = ParseJavaLong(fields[1]);
                                    if (!epoch || !offset) return false;
                                    entries.emplace_back(*epoch, *offset);
                                    return true;
                                  });
  if (!st.ok()) return st;
  return entries;
}

std::string LeaderEpochFileCache::Serialize(const std::vector<EpochEntry>& entries) {
  std::vector<std::string> lines;
  lines.reserve(entries.size());
  for (const auto& [epoch, offset] : entries) {
    lines.push_back(std::to_string(epoch) + " " + std::to_string(offset));
  }
  return SerializeTextCheckpoint(kVersion, lines);
}

Result<LeaderEpochFileCache> LeaderEpochFileCache::Open(const std::string& path, FileSystem* fs,
                                                        bool* was_missing) {
  // Read first: the file is there on every start but a partition's first.
  Result<std::vector<uint8_t>> read = fs->ReadFile(path);
  if (!read.ok() && read.status().IsNotFound()) {
    if (was_missing != nullptr) *was_missing = true;
    DARUMA_RETURN_IF_ERROR(CreateEmptyFileIfMissing(fs, path));
    read = std::vector<uint8_t>();
  }
  DARUMA_RETURN_IF_ERROR(read.status());
  const std::vector<uint8_t>& bytes = *read;
  DARUMA_ASSIGN_OR_RETURN(auto entries, Parse(AsStringView(bytes), path));
  LeaderEpochFileCache cache(path, fs);
  for (const auto& [epoch, offset] : entries) {
    if (epoch < 0 || offset < 0) {
      return Status::Corruption("invalid leader epoch entry (" + std::to_string(epoch) + ", " +
                                std::to_string(offset) + ") in checkpoint file " + path);
    }
    cache.AssignInMemory(epoch, offset);
  }
  // Every line either adds one entry or is dropped (a no-op or a removal).
  cache.file_has_dropped_lines_ = cache.epochs_.size() != entries.size();
  return cache;
}

bool LeaderEpochFileCache::AssignInMemory(int32_t epoch, int64_t start_offset) {
  if (!epochs_.empty()) {
    const auto& [latest_epoch, latest_offset] = *epochs_.rbegin();
    if (latest_epoch == epoch && latest_offset <= start_offset) return false;
  }
  // Keep both columns strictly increasing: drop, newest first, every entry that
  // the new one does not follow.
  while (!epochs_.empty()) {
    auto last = std::prev(epochs_.end());
    if (last->first < epoch && last->second < start_offset) break;
    epochs_.erase(last);
  }
  epochs_[epoch] = start_offset;
  return true;
}

Status LeaderEpochFileCache::Assign(int32_t epoch, int64_t start_offset) {
  if (epoch < 0 || start_offset < 0) {
    return Status::InvalidArgument("received invalid partition leader epoch entry (" +
                                   std::to_string(epoch) + ", " + std::to_string(start_offset) +
                                   ") for " + path_);
  }
  if (!AssignInMemory(epoch, start_offset)) return Status::Ok();
  return WriteCheckpoint();
}

std::optional<int32_t> LeaderEpochFileCache::LatestEpoch() const {
  if (epochs_.empty()) return std::nullopt;
  return epochs_.rbegin()->first;
}

std::optional<EpochEntry> LeaderEpochFileCache::LatestEntry() const {
  if (epochs_.empty()) return std::nullopt;
  return *epochs_.rbegin();
}

EpochEntry LeaderEpochFileCache::EndOffsetFor(int32_t requested_epoch,
                                              int64_t log_end_offset) const {
  if (requested_epoch == kUndefinedEpoch) return {kUndefinedEpoch, kUndefinedEpochOffset};
  if (LatestEpoch() == requested_epoch) return {requested_epoch, log_end_offset};
  auto higher = epochs_.upper_bound(requested_epoch);
  if (higher == epochs_.end()) return {kUndefinedEpoch, kUndefinedEpochOffset};
  if (higher == epochs_.begin()) return {requested_epoch, higher->second};
  return {std::prev(higher)->first, higher->second};
}

bool LeaderEpochFileCache::TruncateFromEnd(int64_t end_offset) {
  if (end_offset < 0 || epochs_.empty() || epochs_.rbegin()->second < end_offset) return false;
  while (!epochs_.empty() && epochs_.rbegin()->second >= end_offset) {
    epochs_.erase(std::prev(epochs_.end()));
  }
  dirty_ = true;
  return true;
}

bool LeaderEpochFileCache::TruncateFromStart(int64_t start_offset) {
  if (start_offset < 0) return false;
  std::optional<EpochEntry> last_removed;
  int removed = 0;
  while (!epochs_.empty() && epochs_.begin()->second <= start_offset) {
    last_removed = *epochs_.begin();
    epochs_.erase(epochs_.begin());
    ++removed;
  }
  if (!last_removed) return false;
  epochs_[last_removed->first] = start_offset;
  // Removing the first entry only to put it back unchanged (the usual case at
  // every start: the log starts where its first epoch does) leaves the file
  // as it is; rewriting it would cost a write and three fsyncs per partition.
  // Kafka rewrites it whenever an entry was removed, which only shows when
  // the file holds lines its load dropped: then it is rewritten here too.
  if (removed == 1 && last_removed->second == start_offset && !file_has_dropped_lines_) {
    return false;
  }
  dirty_ = true;
  return true;
}

Status LeaderEpochFileCache::Flush() {
  if (!dirty_) return Status::Ok();
  return WriteCheckpoint();
}

Status LeaderEpochFileCache::ClearAndFlush() {
  epochs_.clear();
  return WriteCheckpoint();
}

std::vector<EpochEntry> LeaderEpochFileCache::entries() const {
  return {epochs_.begin(), epochs_.end()};
}

Status LeaderEpochFileCache::WriteCheckpoint() {
  DARUMA_RETURN_IF_ERROR(fs_->WriteFileAtomically(path_, AsBytes(Serialize(entries()))));
  dirty_ = false;
  file_has_dropped_lines_ = false;
  return Status::Ok();
}

}  // namespace daruma
