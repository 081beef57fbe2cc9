// FileBatchReader streams the shallow entries of a `.log` file from a start
// position with bounded memory (spec §5), the way recovery, check, dump and
// fetch read segments.
//
// It reads large blocks and walks entries in memory (no system call per
// batch). A length field is never trusted for an allocation: an entry that
// claims more bytes than remain in the file ends iteration as a torn tail.
//
// Contract: the LogEntry returned by Next() points into the reader's buffer
// and is valid only until the next call to Next(). The reader never reads
// past the file size observed at construction (or the given end).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/damage_kind.h"
#include "common/file_system.h"
#include "common/status.h"
#include "record/log_entry.h"

namespace daruma {

// Why iteration stopped.
enum class StopReason {
  kNone,         // not stopped yet
  kEndOfFile,    // clean end: the last entry ended exactly at the end
  kTornTail,     // fewer than a whole entry's bytes remain (partial write)
  kCorruptSize,  // size field < 14 (includes zero-filled preallocated tails)
  kIoError,
};

const char* StopReasonName(StopReason reason);

struct FileBatchReaderOptions {
  uint64_t start_position = 0;
  // Stop before this position (default: file size at construction).
  std::optional<uint64_t> end_position;
  // The file's size, when the caller knows it (a segment's, taken when it
  // was opened): saves the stat that a deferred open (CachingFileSystem)
  // makes for File::Size, one per scan of a crashed partition. A file found
  // shorter than this reads as an I/O error (a short read), not as its end.
  std::optional<uint64_t> file_size;
  // Read block size. Entries larger than this get a buffer of their own size
  // (bounded by the remaining file length).
  size_t block_size = 1 << 20;
  // Advise the kernel to drop pages once consumed (for `check` on live dirs).
  bool drop_cache = false;
  // Map the file (File::MapForRead) instead of copying blocks with ReadAt:
  // saves the kernel's copy, most of a scan's cost from the page cache. The
  // rest of the range is mapped once, at the first read; each block is
  // populated before it is read and released after (MappedRegion), so only
  // about one block is resident. Only for a reader that owns the file (see
  // MapForRead); falls back to ReadAt.
  bool map = false;
};

class FileBatchReader {
 public:
  FileBatchReader(const File* file, FileBatchReaderOptions options = {});

  // Returns the next entry, or nullopt when iteration stops; then
  // stop_reason() and stop_message() say why.
  std::optional<LogEntry> Next();

  StopReason stop_reason() const { return stop_reason_; }
  // For kTornTail/kCorruptSize/kIoError: file, position, field, expected vs found.
  const std::string& stop_message() const { return stop_message_; }
  // The stop in the one damage taxonomy (common/damage_kind.h): kTornTail,
  // kZeroTail (offset and size fields both zero: preallocated or zeroed
  // space), kBadSize, kIoError; nullopt before a stop and at a clean end.
  std::optional<DamageKind> damage() const;
  const Status& io_status() const { return io_status_; }
  // After Next() returned nullopt, as a Status for callers that read batches
  // they trust to be whole (LEO lookup, producer-state rebuild): OK at the end
  // of the file or a torn tail (Kafka stops silently there), the I/O error, or
  // kCorruption for a corrupt size field.
  Status ScanStatus() const;
  // Position of the next unread byte: after a stop, where the bad/torn bytes start.
  uint64_t position() const { return position_; }
  uint64_t end() const { return end_; }

 private:
  // Makes [pos, pos + need) readable at data_; false on an I/O error. The
  // bytes are usually in the block already (the check is inline: it runs
  // twice per entry).
  bool Fill(uint64_t pos, size_t need) {
    return (pos >= buffer_start_ && pos + need <= buffer_start_ + buffer_len_) || Refill(pos, need);
  }
  bool Refill(uint64_t pos, size_t need);
  // The map branch of Fill: [pos, pos + want) as a window of mapped_.
  bool FillFromMapping(uint64_t pos, size_t want);

  const File* file_;
  FileBatchReaderOptions options_;
  uint64_t end_ = 0;
  uint64_t position_ = 0;
  std::vector<uint8_t> buffer_;
  // With options_.map: [mapped_from_, end_) mapped; bytes of it before
  // mapped_from_ + released_ are released.
  std::unique_ptr<MappedRegion> mapped_;
  bool map_failed_ = false;
  uint64_t mapped_from_ = 0;
  size_t released_ = 0;
  const uint8_t* data_ = nullptr;  // buffer_.data() or inside mapped_
  uint64_t buffer_start_ = 0;      // file position of buffer_[0]
  size_t buffer_len_ = 0;
  uint64_t dropped_upto_ = 0;
  StopReason stop_reason_ = StopReason::kNone;
  bool zero_entry_ = false;  // kCorruptSize at an entry whose header is all zeros
  std::string stop_message_;
  Status io_status_;
};

}  // namespace daruma
