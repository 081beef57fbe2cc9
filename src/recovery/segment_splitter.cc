#include "recovery/segment_splitter.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "log/log_file_names.h"
#include "log/relative_offset.h"
#include "record/file_batch_reader.h"
#include "record/legacy_message.h"

namespace daruma {

namespace {

// Kafka reads each chunk into a 1 MiB buffer that only grows for a single
// larger batch, and then stays grown for the rest of that segment.
constexpr int64_t kChunkBufferBytes = 1 << 20;

// Kafka's FileChannelRecordBatch.baseOffset: a v2 batch's base offset; for a
// legacy entry the offset of its first message (AbstractLegacyRecordBatch:
// iterator().next().offset()). The offset field of a compressed wrapper is
// its LAST inner offset, so the wrapper is decompressed for the first one:
// the overflowed pre-2.0 segments this split exists for are full of them.
Result<int64_t> FirstOffset(const LogEntry& e) {
  if (e.is_v2()) return e.batch().base_offset();
  DARUMA_ASSIGN_OR_RETURN(LegacyMessageView message, LegacyMessageView::Parse(e.bytes));
  if (message.compression_id() == 0) return message.offset();
  DARUMA_ASSIGN_OR_RETURN(std::vector<Record> inner, message.DecodeRecords());
  if (inner.empty()) {
    return Status::Corruption(
        fmt::format("compressed message at offset {} holds no messages", message.offset()));
  }
  return inner.front().offset;
}

Status RemoveCleanedFiles(FileSystem* fs, const std::string& dir, int64_t base) {
  for (const std::string& path : {LogFileName(dir, base, kCleanedFileSuffix),
                                  OffsetIndexFileName(dir, base, kCleanedFileSuffix),
                                  TimeIndexFileName(dir, base, kCleanedFileSuffix),
                                  TxnIndexFileName(dir, base, kCleanedFileSuffix)}) {
    if (fs->Exists(path)) DARUMA_RETURN_IF_ERROR(fs->Remove(path));
  }
  return Status::Ok();
}

// One chunk to copy: [position, position + bytes) of the source.
struct Chunk {
  int64_t position = 0;
  int64_t bytes = 0;
  int64_t max_offset = 0;
  int64_t max_timestamp = std::numeric_limits<int64_t>::min();
  int64_t offset_of_max_timestamp = 0;
};

Status CopyChunk(const File* source, const Chunk& chunk, LogSegment* dest, Bytes* buffer) {
  buffer->resize(size_t(chunk.bytes));
  DARUMA_ASSIGN_OR_RETURN(size_t n, source->ReadAt(uint64_t(chunk.position), *buffer));
  if (n != buffer->size()) {
    return Status::IoError(fmt::format("{}: read {} bytes at position {}, expected {}",
                                       source->path(), n, chunk.position, chunk.bytes));
  }
  return dest->Append(chunk.max_offset, chunk.max_timestamp, chunk.offset_of_max_timestamp,
                      *buffer);
}

// Appends batches from `position` while they fit `dest` (Kafka's
// appendFromFile); returns the bytes copied.
Result<int64_t> AppendFromFile(const LogSegment& source, int64_t position, LogSegment* dest) {
  FileBatchReaderOptions ro;
  ro.start_position = uint64_t(position);
  ro.end_position = uint64_t(source.size());
  FileBatchReader reader(source.log_file(), ro);
  int64_t capacity = kChunkBufferBytes;
  Chunk chunk{position};
  Bytes buffer;
  int64_t copied = 0;
  while (auto e = reader.Next()) {
    if (!e->has_batch_header()) break;
    const int64_t size = int64_t(e->size());
    if (!FitsRelativeOffset(dest->base_offset(), e->last_offset())) break;
    if (chunk.bytes > 0 && chunk.bytes + size >= capacity) {
      DARUMA_RETURN_IF_ERROR(CopyChunk(source.log_file(), chunk, dest, &buffer));
      copied += chunk.bytes;
      chunk = Chunk{e->position};
    }
    chunk.max_offset = e->last_offset();
    if (e->max_timestamp() > chunk.max_timestamp) {
      chunk.max_timestamp = e->max_timestamp();
      chunk.offset_of_max_timestamp = chunk.max_offset;
    }
    chunk.bytes += size;
    capacity = std::max(capacity, chunk.bytes);
  }
  DARUMA_RETURN_IF_ERROR(reader.ScanStatus());
  if (chunk.bytes > 0) {
    DARUMA_RETURN_IF_ERROR(CopyChunk(source.log_file(), chunk, dest, &buffer));
    copied += chunk.bytes;
  }
  return copied;
}

Result<std::optional<int64_t>> FirstOffsetAt(const LogSegment& segment, int64_t position) {
  FileBatchReaderOptions ro;
  ro.start_position = uint64_t(position);
  ro.end_position = uint64_t(segment.size());
  ro.block_size = 4096;
  FileBatchReader reader(segment.log_file(), ro);
  auto e = reader.Next();
  if (!e || !e->has_batch_header()) {
    DARUMA_RETURN_IF_ERROR(reader.ScanStatus());
    return std::optional<int64_t>();
  }
  Result<int64_t> first = FirstOffset(*e);
  if (!first.ok()) {
    return Status::Corruption(fmt::format("{}: entry at position {}: {}", segment.log_path(),
                                          position, first.status().message()));
  }
  return std::optional<int64_t>(*first);
}

Status Finalize(FileSystem* fs, LogSegment* segment, int64_t mtime) {
  DARUMA_RETURN_IF_ERROR(segment->OnBecomeInactiveSegment());
  DARUMA_RETURN_IF_ERROR(segment->Flush());
  for (const std::string& path :
       {segment->log_path(), segment->offset_index_path(), segment->time_index_path()}) {
    if (fs->Exists(path)) DARUMA_RETURN_IF_ERROR(fs->SetModifiedTimeMs(path, mtime));
  }
  return Status::Ok();
}

Result<std::vector<std::unique_ptr<LogSegment>>> Split(
    FileSystem* fs, LogSegment* segment, const LogConfig& config, Clock* clock,
    std::vector<std::unique_ptr<LogSegment>>* out) {
  const std::string& dir = segment->dir();
  int64_t position = 0;
  while (position < segment->size()) {
    DARUMA_ASSIGN_OR_RETURN(auto first, FirstOffsetAt(*segment, position));
    if (!first) {
      return Status::Corruption(fmt::format("{}: no whole batch at position {} to split from",
                                            segment->log_path(), position));
    }
    DARUMA_RETURN_IF_ERROR(RemoveCleanedFiles(fs, dir, *first));
    DARUMA_ASSIGN_OR_RETURN(auto fresh, LogSegment::Open(fs, dir, *first, config, false,
                                                         std::string(kCleanedFileSuffix), clock));
    out->push_back(std::move(fresh));
    DARUMA_ASSIGN_OR_RETURN(int64_t copied, AppendFromFile(*segment, position, out->back().get()));
    if (copied == 0) {
      return Status::Corruption(fmt::format(
          "{}: splitting failed to copy the batch at position {} (offset {}) into segment {}",
          segment->log_path(), position, *first, *first));
    }
    position += copied;
  }
  DARUMA_ASSIGN_OR_RETURN(int64_t mtime, fs->ModifiedTimeMs(segment->log_path()));
  int64_t total = 0;
  for (auto& fresh : *out) {
    DARUMA_RETURN_IF_ERROR(Finalize(fs, fresh.get(), mtime));
    total += fresh->size();
  }
  if (total != segment->size()) {
    return Status::Corruption(
        fmt::format("{}: inconsistent segment sizes after split: expected {}, found {}",
                    segment->log_path(), segment->size(), total));
  }
  return std::move(*out);
}

}  // namespace

Result<std::optional<UnsplittableTail>> FindUnsplittableTail(const LogSegment& segment) {
  FileBatchReaderOptions ro;
  ro.end_position = uint64_t(segment.size());
  FileBatchReader reader(segment.log_file(), ro);
  std::optional<int64_t> overflow_last;  // last offset of the first entry that does not fit
  bool corroborated = false;
  auto found = [&](int64_t position, DamageKind kind, std::string reason) {
    return std::optional<UnsplittableTail>(
        UnsplittableTail{position, kind, std::move(reason), corroborated});
  };
  while (auto e = reader.Next()) {
    Status valid = e->Validate();
    if (!valid.ok()) {
      return found(e->position, DamageKindOf(valid).value_or(DamageKind::kBadCrc),
                   fmt::format("{}: {}", segment.log_path(), valid.message()));
    }
    const int64_t last = e->last_offset();
    Result<int64_t> first = FirstOffset(*e);
    if (!first.ok()) {
      return found(e->position, DamageKind::kInvalidRecord,
                   fmt::format("{}: entry at position {}: {}", segment.log_path(), e->position,
                               first.status().message()));
    }
    if (!HasNextOffset(*first, last)) {
      return found(e->position, DamageKind::kOffsetOverflow,
                   fmt::format("{}: entry at position {}: offsets {} to {} leave no next offset "
                               "below 2^63 (the offset fields are outside the CRC)",
                               segment.log_path(), e->position, *first, last));
    }
    if (overflow_last && *first > *overflow_last) corroborated = true;
    if (!overflow_last && !FitsRelativeOffset(segment.base_offset(), last)) overflow_last = last;
  }
  if (reader.stop_reason() == StopReason::kIoError) return reader.io_status();
  if (reader.stop_reason() == StopReason::kEndOfFile) return std::optional<UnsplittableTail>();
  return found(int64_t(reader.position()), reader.damage().value_or(DamageKind::kTornTail),
               reader.stop_message());
}

Result<std::vector<std::unique_ptr<LogSegment>>> SplitOverflowedSegment(FileSystem* fs,
                                                                        LogSegment* segment,
                                                                        const LogConfig& config,
                                                                        Clock* clock) {
  if (!HasSuffix(segment->log_path(), kLogFileSuffix)) {
    return Status::InvalidArgument(
        fmt::format("{}: only a .log segment can be split", segment->log_path()));
  }
  DARUMA_ASSIGN_OR_RETURN(int64_t next, segment->ReadNextOffset());
  if (!(next > segment->base_offset() && !FitsRelativeOffset(segment->base_offset(), next - 1))) {
    return Status::InvalidArgument(
        fmt::format("{}: split refused: segment does not overflow (next offset {}, base {})",
                    segment->log_path(), next, segment->base_offset()));
  }
  std::vector<std::unique_ptr<LogSegment>> fresh;
  auto split = Split(fs, segment, config, clock, &fresh);
  if (!split.ok()) {
    for (auto& s : fresh) {
      (void)s->Close();
      (void)s->DeleteFiles();
    }
  }
  return split;
}

}  // namespace daruma
