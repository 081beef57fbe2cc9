// TimeIndex: the time index `<base>.timeindex` of one segment (spec §7.3).
//
// Format (12-byte entries, big-endian, no header):
//   0  int64  timestamp (ms): the largest timestamp seen in the segment so far
//   8  int32  relativeOffset: offset - base of the (shallow) batch that carried it
//
// Invariants: timestamps strictly increase, offsets never decrease. With no
// entries the "last entry" is (-1, base offset), so negative timestamps are
// never indexed. One slot is reserved for the entry written at roll/close, so
// the index is full at max_entries() - 1 entries. File mechanics as IndexFile.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/file_system.h"
#include "common/status.h"
#include "log/index_file.h"

namespace daruma {

struct TimestampOffset {
  int64_t timestamp = -1;
  int64_t offset = 0;
  bool operator==(const TimestampOffset&) const = default;
};

class TimeIndex {
 public:
  static constexpr size_t kEntrySize = 12;

  static Result<std::unique_ptr<TimeIndex>> Open(const std::string& path, int64_t base_offset,
                                                 int32_t max_index_size = 10 * 1024 * 1024,
                                                 FileSystem* fs = FileSystem::Default(),
                                                 bool writable = true, bool defer_new_file = false);

  // Kafka's maybeAppend, checked in this order: full (unless skip_full_check,
  // used for the final entry at roll/close) -> kInvalidArgument; non-empty and
  // offset < last offset -> kInvalidOffset; non-empty and timestamp < last
  // timestamp -> kInvalidArgument; then the entry is written only if timestamp
  // > last timestamp (equal timestamps, e.g. a repeated final entry, are ignored).
  Status MaybeAppend(int64_t timestamp, int64_t offset, bool skip_full_check = false);
  // The entry with the largest timestamp <= target, or (-1, base offset).
  TimestampOffset Lookup(int64_t target_timestamp) const;
  TimestampOffset Entry(size_t slot) const;
  size_t entries() const { return file_->entries(); }
  size_t max_entries() const { return file_->max_entries(); }
  bool IsFull() const { return entries() + 1 >= max_entries(); }
  // The last entry, or (-1, base offset) when empty.
  TimestampOffset LastEntry() const;

  // Removes entries with offset >= `offset` (§7.1 truncate rule, by offset).
  void TruncateTo(int64_t offset);
  void Truncate() { file_->TruncateToEntries(0); }
  Status Reset() { return file_->Reset(); }
  Status TrimToValidSize() { return file_->TrimToValidSize(); }
  Status TrimThenResize(int64_t new_size) { return file_->TrimThenResize(new_size); }
  Status Resize(int64_t new_max_size, bool extend_file = true) {
    return file_->Resize(new_max_size, extend_file);
  }
  Status Flush() { return file_->Flush(); }
  // Writes appended entries not yet in the file (IndexFile's write-behind).
  Status WriteAppended() { return file_->WriteAppended(); }
  Status Close() { return file_->Close(); }
  // The file is not created yet (IndexFile: "Deferred files").
  bool deferred() const { return file_->deferred(); }
  Status CreateIfDeferred() { return file_->CreateIfDeferred(); }
  Status DeleteIfExists(bool* existed = nullptr) { return file_->DeleteIfExists(existed); }
  Status RenameTo(const std::string& new_path) { return file_->RenameTo(new_path); }

  // §7.5: last timestamp >= first timestamp, last offset >= base, file length
  // a multiple of 12. Corruption naming the file otherwise.
  Status SanityCheck() const;
  // Beyond Kafka: every entry has offset >= base, and offsets and timestamps
  // never decrease. Corruption names the file, slot and values.
  Status CheckEntries() const;

  int64_t base_offset() const { return file_->base_offset(); }
  const std::string& path() const { return file_->path(); }
  uint64_t length() const { return file_->length(); }

 private:
  explicit TimeIndex(std::unique_ptr<IndexFile> file) : file_(std::move(file)) {}

  std::unique_ptr<IndexFile> file_;
};

}  // namespace daruma
