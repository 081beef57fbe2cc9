#include "record/file_batch_reader.h"

#include <fmt/format.h>

#include <algorithm>

namespace daruma {
namespace {

// Offset (8) + size (4) + the 4 bytes before magic (CRC or leader epoch) + magic.
constexpr uint64_t kHeaderSizeUpToMagic = 17;
constexpr int32_t kMinEntrySize = 14;  // v0 minimum, applied to every magic (spec §5)

}  // namespace

const char* StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kNone:
      return "none";
    case StopReason::kEndOfFile:
      return "end of file";
    case StopReason::kTornTail:
      return "torn tail";
    case StopReason::kCorruptSize:
      return "corrupt size";
    case StopReason::kIoError:
      return "I/O error";
  }
  return "unknown";
}

FileBatchReader::FileBatchReader(const File* file, FileBatchReaderOptions options)
    : file_(file), options_(options), position_(options.start_position) {
  Result<uint64_t> size =
      options_.file_size ? Result<uint64_t>(*options_.file_size) : file_->Size();
  if (!size.ok()) {
    stop_reason_ = StopReason::kIoError;
    io_status_ = size.status();
    stop_message_ = io_status_.ToString();
    return;
  }
  end_ = options_.end_position ? std::min(*options_.end_position, *size) : *size;
  dropped_upto_ = position_;
}

bool FileBatchReader::Refill(uint64_t pos, size_t need) {
  if (options_.drop_cache && buffer_start_ > dropped_upto_) {
    const_cast<File*>(file_)->DropCache(dropped_upto_, buffer_start_ - dropped_upto_);
    dropped_upto_ = buffer_start_;
  }
  // Callers guarantee pos + need <= end_, so this never over-allocates.
  size_t want =
      size_t(std::min<uint64_t>(std::max<uint64_t>(options_.block_size, need), end_ - pos));
  if (options_.map && FillFromMapping(pos, want)) return true;
  if (buffer_.size() < want) buffer_.resize(want);
  data_ = buffer_.data();
  auto n = file_->ReadAt(pos, std::span<uint8_t>(buffer_.data(), want));
  if (!n.ok()) {
    io_status_ = n.status();
    return false;
  }
  buffer_start_ = pos;
  buffer_len_ = *n;
  if (buffer_len_ < need) {
    io_status_ =
        Status::IoError(fmt::format("{}: short read at position {}: expected {} bytes, got {}",
                                    file_->path(), pos, need, buffer_len_));
    return false;
  }
  return true;
}

// One mmap and one munmap per scan, not per block: munmap takes the address
// space's lock for writing, so scan threads that mapped and unmapped 8 MiB
// blocks stalled each other (two threads recovered one partition 1.5x as fast
// as one); populating and releasing only take it for reading. Callers read
// forwards (pos never decreases), so everything before pos is done with.
bool FileBatchReader::FillFromMapping(uint64_t pos, size_t want) {
  if (mapped_ == nullptr && !map_failed_) {
    mapped_from_ = pos;
    mapped_ = file_->MapForRead(pos, size_t(end_ - pos));
    map_failed_ = mapped_ == nullptr;
  }
  if (mapped_ == nullptr || pos < mapped_from_ + released_) return false;
  const size_t at = size_t(pos - mapped_from_);
  mapped_->Release(released_, at - released_);
  released_ = at;
  mapped_->Populate(at, want);
  data_ = mapped_->data + at;
  buffer_start_ = pos;
  buffer_len_ = want;
  return true;
}

std::optional<DamageKind> FileBatchReader::damage() const {
  switch (stop_reason_) {
    case StopReason::kTornTail:
      return DamageKind::kTornTail;
    case StopReason::kCorruptSize:
      return zero_entry_ ? DamageKind::kZeroTail : DamageKind::kBadSize;
    case StopReason::kIoError:
      return DamageKind::kIoError;
    default:
      return std::nullopt;
  }
}

Status FileBatchReader::ScanStatus() const {
  switch (stop_reason_) {
    case StopReason::kIoError:
      return io_status_;
    case StopReason::kCorruptSize:
      return WithDamageKind(Status::Corruption(stop_message_), *damage());
    default:
      return Status::Ok();
  }
}

std::optional<LogEntry> FileBatchReader::Next() {
  if (stop_reason_ != StopReason::kNone) return std::nullopt;
  const uint64_t remaining = end_ > position_ ? end_ - position_ : 0;
  if (remaining <= kHeaderSizeUpToMagic) {
    if (remaining == 0) {
      stop_reason_ = StopReason::kEndOfFile;
    } else {
      stop_reason_ = StopReason::kTornTail;
      stop_message_ = fmt::format(
          "{}: torn tail at position {}: {} bytes remain, fewer than an entry header (17 bytes)",
          file_->path(), position_, remaining);
    }
    if (options_.drop_cache && end_ > dropped_upto_) {
      const_cast<File*>(file_)->DropCache(dropped_upto_, end_ - dropped_upto_);
    }
    return std::nullopt;
  }
  if (!Fill(position_, kHeaderSizeUpToMagic)) {
    stop_reason_ = StopReason::kIoError;
    stop_message_ = io_status_.ToString();
    return std::nullopt;
  }
  const uint8_t* header = data_ + (position_ - buffer_start_);
  const int64_t offset = int64_t(LoadBe64(header));
  const int32_t size = int32_t(LoadBe32(header + 8));
  if (size < kMinEntrySize) {
    stop_reason_ = StopReason::kCorruptSize;
    zero_entry_ = offset == 0 && size == 0;
    stop_message_ = fmt::format(
        "{}: corrupt entry at position {} (offset field {}): field size: expected >= {}, found {}",
        file_->path(), position_, offset, kMinEntrySize, size);
    return std::nullopt;
  }
  const uint64_t entry_size = uint64_t(kLogOverhead) + uint64_t(size);
  if (entry_size > remaining) {
    stop_reason_ = StopReason::kTornTail;
    stop_message_ = fmt::format(
        "{}: torn tail at position {} (offset field {}): entry needs {} bytes, only {} remain",
        file_->path(), position_, offset, entry_size, remaining);
    return std::nullopt;
  }
  if (!Fill(position_, size_t(entry_size))) {
    stop_reason_ = StopReason::kIoError;
    stop_message_ = io_status_.ToString();
    return std::nullopt;
  }
  LogEntry entry;
  entry.position = int64_t(position_);
  entry.bytes = ByteSpan(data_ + (position_ - buffer_start_), size_t(entry_size));
  entry.magic = int8_t(entry.bytes[16]);
  position_ += entry_size;
  return entry;
}

}  // namespace daruma
