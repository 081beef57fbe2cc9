// OffsetIndex: the sparse offset index `<base>.index` of one segment (spec §7.2).
//
// Format (8-byte entries, big-endian, no header):
//   0  int32  relativeOffset = offset - base offset
//   4  int32  position       = byte position in the segment's .log file
//
// Invariants: entry offsets are strictly increasing; every offset satisfies
// 0 <= offset - base <= INT32_MAX. Entry `(o, p)` means a reader looking for
// any offset >= o may start scanning the .log at p. Keys may be batch last
// offsets (Kafka >= 2.0) or first offsets (<= 1.1); both are valid for lookup.
// File mechanics (preallocation, trim, reset, no zero-slot scan) are those of
// IndexFile (§7.1).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "common/file_system.h"
#include "common/status.h"
#include "log/index_file.h"

namespace daruma {

struct OffsetPosition {
  int64_t offset = 0;
  int32_t position = 0;
  bool operator==(const OffsetPosition&) const = default;
};

class OffsetIndex {
 public:
  static constexpr size_t kEntrySize = 8;

  static Result<std::unique_ptr<OffsetIndex>> Open(const std::string& path, int64_t base_offset,
                                                   int32_t max_index_size = 10 * 1024 * 1024,
                                                   FileSystem* fs = FileSystem::Default(),
                                                   bool writable = true,
                                                   bool defer_new_file = false);

  // Appends (offset, position). kInvalidOffset if offset <= LastOffset() while
  // non-empty; kOffsetOverflow if offset - base is outside [0, INT32_MAX];
  // kInvalidArgument if the index is full.
  Status Append(int64_t offset, int32_t position);
  // The entry with the largest offset <= target, or (base offset, 0).
  OffsetPosition Lookup(int64_t target_offset) const;
  // Entry `slot` as absolute offset and position (slot < entries()).
  OffsetPosition Entry(size_t slot) const;
  size_t entries() const { return file_->entries(); }
  size_t max_entries() const { return file_->max_entries(); }
  bool IsFull() const { return entries() >= max_entries(); }
  // Offset of the last entry, or the base offset when empty.
  int64_t LastOffset() const;
  OffsetPosition LastEntry() const;

  // Removes entries with offset >= `offset` (§7.1 truncate rule).
  void TruncateTo(int64_t offset);
  // Removes every entry (memory only; see Reset for the file).
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

  // §7.5: the last entry's offset must be >= base, the file length a multiple
  // of 8. Corruption naming the file otherwise.
  Status SanityCheck() const;
  // Beyond Kafka (which never checks an index it will not rebuild): every entry
  // has offset >= base, offsets and positions strictly increasing, and a
  // position inside the .log (< log_size). A flipped bit or a preallocated zero
  // tail breaks one of these; Corruption names the file, slot and values.
  Status CheckEntries(int64_t log_size) const;

  int64_t base_offset() const { return file_->base_offset(); }
  const std::string& path() const { return file_->path(); }
  uint64_t length() const { return file_->length(); }

 private:
  explicit OffsetIndex(std::unique_ptr<IndexFile> file) : file_(std::move(file)) {}
  int64_t OffsetAt(size_t slot) const;

  std::unique_ptr<IndexFile> file_;
};

}  // namespace daruma
