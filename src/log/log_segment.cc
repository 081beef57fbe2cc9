#include "log/log_segment.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>

#include "common/clock.h"
#include "log/log_file_names.h"
#include "log/relative_offset.h"

namespace daruma {

int64_t RandomSegmentJitterMs(const LogConfig& config) {
  if (config.segment_jitter_ms <= 0 || config.segment_ms <= 0) return 0;
  thread_local std::mt19937_64 random{std::random_device{}()};
  const uint64_t bound = uint64_t(std::min(config.segment_jitter_ms, config.segment_ms));
  return int64_t(random() % bound);
}

Result<std::unique_ptr<LogSegment>> LogSegment::Open(FileSystem* fs, const std::string& dir,
                                                     int64_t base_offset, const LogConfig& config,
                                                     bool file_already_exists,
                                                     const std::string& file_suffix, Clock* clock) {
  if (clock == nullptr) clock = Clock::System();
  std::unique_ptr<LogSegment> seg(new LogSegment(fs, dir, base_offset, config, file_suffix, clock));
  const std::string path = LogFileName(dir, base_offset, file_suffix);
  seg->created_ms_ = clock->NowMs();
  seg->roll_jitter_ms_ = RandomSegmentJitterMs(config);
  if (file_already_exists) {
    uint64_t size = 0;
    DARUMA_ASSIGN_OR_RETURN(seg->log_file_, fs->OpenWithSize(path, OpenMode::kReadWrite, &size));
    if (size > uint64_t(std::numeric_limits<int32_t>::max())) {
      return Status::Corruption(
          fmt::format("{}: segment file of {} bytes exceeds 2^31-1", path, size));
    }
    seg->size_ = int64_t(size);
  } else {
    DARUMA_ASSIGN_OR_RETURN(seg->log_file_, fs->Open(path, OpenMode::kTruncate));
    if (config.preallocate && config.InitFileSize() > 0) {
      DARUMA_RETURN_IF_ERROR(seg->log_file_->Truncate(uint64_t(config.InitFileSize())));
      seg->file_may_exceed_size_ = true;
    }
  }
  seg->txn_index_ = std::make_unique<TransactionIndex>(
      TxnIndexFileName(dir, base_offset, file_suffix), base_offset, fs);
  return seg;
}

LogSegment::~LogSegment() = default;

std::string LogSegment::offset_index_path() const {
  return OffsetIndexFileName(dir_, base_offset_, suffix_);
}
std::string LogSegment::time_index_path() const {
  return TimeIndexFileName(dir_, base_offset_, suffix_);
}
std::string LogSegment::txn_index_path() const {
  return TxnIndexFileName(dir_, base_offset_, suffix_);
}

bool LogSegment::offset_index_exists() const {
  return offset_index_ != nullptr || fs_->Exists(offset_index_path());
}

Result<OffsetIndex*> LogSegment::offset_index() {
  return offset_index(/*defer_new_file=*/false);
}

Result<OffsetIndex*> LogSegment::offset_index(bool defer_new_file) {
  if (!offset_index_) {
    DARUMA_ASSIGN_OR_RETURN(offset_index_, OffsetIndex::Open(offset_index_path(), base_offset_,
                                                             config_.segment_index_bytes, fs_,
                                                             /*writable=*/true, defer_new_file));
  }
  if (verify_offset_index_) DARUMA_RETURN_IF_ERROR(VerifyIndexIfPending(/*offset_index=*/true));
  return offset_index_.get();
}

Result<TimeIndex*> LogSegment::time_index() {
  return time_index(/*defer_new_file=*/false);
}

Result<TimeIndex*> LogSegment::time_index(bool defer_new_file) {
  if (!time_index_) {
    DARUMA_ASSIGN_OR_RETURN(time_index_, TimeIndex::Open(time_index_path(), base_offset_,
                                                         config_.segment_index_bytes, fs_,
                                                         /*writable=*/true, defer_new_file));
  }
  if (verify_time_index_) DARUMA_RETURN_IF_ERROR(VerifyIndexIfPending(/*offset_index=*/false));
  return time_index_.get();
}

void LogSegment::VerifyIndexesOnFirstLoad(IndexWarningSink on_rebuild) {
  verify_offset_index_ = true;
  verify_time_index_ = true;
  on_index_rebuild_ = std::move(on_rebuild);
}

Status LogSegment::VerifyIndexIfPending(bool offset_index) {
  // Cleared first: the check and the rebuild below load indexes themselves.
  (offset_index ? verify_offset_index_ : verify_time_index_) = false;
  Status checked = offset_index ? offset_index_->CheckEntries(size_) : time_index_->CheckEntries();
  if (checked.ok() && offset_index) checked = CheckLastOffsetIndexEntryTarget();
  if (checked.ok()) return checked;
  if (!checked.IsCorruption()) return checked;
  index_rebuild_warning_ = fmt::format(
      "Found a corrupted index file corresponding to log file {} due to {}, "
      "rebuilding index files from the log (read-only)...",
      log_path(), checked.message());
  if (on_index_rebuild_) on_index_rebuild_(index_rebuild_warning_);
  return RebuildIndexes();
}

Status LogSegment::RebuildIndexes() {
  verify_offset_index_ = false;
  verify_time_index_ = false;
  DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, offset_index());
  DARUMA_ASSIGN_OR_RETURN(TimeIndex * ti, time_index());
  DARUMA_RETURN_IF_ERROR(oi->Reset());
  DARUMA_RETURN_IF_ERROR(ti->Reset());
  int64_t position = 0;
  int64_t last_index_entry = 0;
  int64_t max_ts = -1;
  int64_t shallow_of_max = -1;
  FileBatchReaderOptions ro;
  ro.end_position = uint64_t(size_);
  FileBatchReader reader(log_file_.get(), ro);
  while (auto e = reader.Next()) {
    // Entries only ever point at valid batches: a corrupt one ends the index
    // (readers scan on from the last entry), and the .log is left as it is.
    if (!e->Validate().ok() || !CanConvertToRelativeOffset(e->last_offset())) break;
    if (e->max_timestamp() > max_ts) {
      max_ts = e->max_timestamp();
      shallow_of_max = e->last_offset();
    }
    if (position - last_index_entry > config_.index_interval_bytes) {
      DARUMA_RETURN_IF_ERROR(oi->Append(e->last_offset(), int32_t(position)));
      DARUMA_RETURN_IF_ERROR(ti->MaybeAppend(max_ts, shallow_of_max));
      last_index_entry = position;
    }
    position += int64_t(e->size());
  }
  if (reader.stop_reason() == StopReason::kIoError) return reader.io_status();
  DARUMA_RETURN_IF_ERROR(oi->TrimToValidSize());
  DARUMA_RETURN_IF_ERROR(ti->MaybeAppend(max_ts, shallow_of_max, /*skip_full_check=*/true));
  DARUMA_RETURN_IF_ERROR(ti->TrimToValidSize());
  max_timestamp_so_far_ = max_ts;
  shallow_offset_of_max_timestamp_ = shallow_of_max;
  return Status::Ok();
}

bool LogSegment::CanConvertToRelativeOffset(int64_t offset) const {
  return FitsRelativeOffset(base_offset_, offset);
}

Status LogSegment::LoadMaxTimestampFromTimeIndex() {
  if (max_timestamp_so_far_) return Status::Ok();
  DARUMA_ASSIGN_OR_RETURN(TimeIndex * ti, time_index());
  TimestampOffset last = ti->LastEntry();
  max_timestamp_so_far_ = last.timestamp;
  shallow_offset_of_max_timestamp_ = last.offset;
  return Status::Ok();
}

Result<int64_t> LogSegment::MaxTimestampSoFar() {
  DARUMA_RETURN_IF_ERROR(LoadMaxTimestampFromTimeIndex());
  return *max_timestamp_so_far_;
}

Status LogSegment::Append(int64_t largest_offset, int64_t largest_timestamp,
                          int64_t shallow_offset_of_max_timestamp, ByteSpan records) {
  if (records.empty()) return Status::Ok();
  const int64_t position = size_;
  if (position == 0) rolling_based_timestamp_ = largest_timestamp;
  if (!CanConvertToRelativeOffset(largest_offset)) {
    return Status::OffsetOverflow(
        fmt::format("{}: offset {} cannot be stored relative to base offset {}", log_path(),
                    largest_offset, base_offset_));
  }
  DARUMA_RETURN_IF_ERROR(WriteRecords(position, records));
  log_unsynced_ = true;
  size_ += int64_t(records.size());
  DARUMA_RETURN_IF_ERROR(LoadMaxTimestampFromTimeIndex());
  if (largest_timestamp > *max_timestamp_so_far_) {
    max_timestamp_so_far_ = largest_timestamp;
    shallow_offset_of_max_timestamp_ = shallow_offset_of_max_timestamp;
  }
  if (bytes_since_last_index_entry_ > config_.index_interval_bytes) {
    DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, offset_index());
    DARUMA_ASSIGN_OR_RETURN(TimeIndex * ti, time_index());
    DARUMA_RETURN_IF_ERROR(oi->Append(largest_offset, int32_t(position)));
    DARUMA_RETURN_IF_ERROR(
        ti->MaybeAppend(*max_timestamp_so_far_, shallow_offset_of_max_timestamp_));
    // A live append publishes its index entry to the page cache at once, as
    // Kafka's mmap does, so a killed broker leaves the same index bytes.
    DARUMA_RETURN_IF_ERROR(oi->WriteAppended());
    DARUMA_RETURN_IF_ERROR(ti->WriteAppended());
    bytes_since_last_index_entry_ = 0;
  }
  bytes_since_last_index_entry_ += int64_t(records.size());
  return Status::Ok();
}

Status LogSegment::WriteRecords(int64_t position, ByteSpan records) {
  if (config_.preallocate) {
    file_may_exceed_size_ = true;  // the append window reserves ahead
    // Up to the preallocated size (segment.bytes) only, so the file never
    // grows past what Kafka would have preallocated.
    DARUMA_ASSIGN_OR_RETURN(
        bool stored, append_window_.Store(*log_file_, uint64_t(position), records,
                                          uint64_t(std::max<int64_t>(config_.InitFileSize(), 0))));
    if (stored) return Status::Ok();
  }
  return log_file_->WriteAt(uint64_t(position), records);
}

Status LogSegment::UpdateTxnIndex(const AbortedTxn& txn) {
  return txn_index_->Append(txn);
}

Status LogSegment::BufferTxnIndexUpdate(const AbortedTxn& txn) {
  return txn_index_->AppendBuffered(txn);
}

namespace {

// The part of an entry header TranslateOffset needs: offset, size, magic and,
// for v2, lastOffsetDelta (bytes [0, 27) of a batch).
constexpr size_t kScanHeaderBytes = batch_layout::kLastOffsetDelta + 4;

// Smallest size field of any entry (a v0 message); smaller is corruption.
constexpr int32_t kMinEntrySizeField = 14;

}  // namespace

template <typename Visit>
Status LogSegment::ScanEntryHeaders(int64_t from, int64_t end, Visit&& visit) const {
  // Reads entry headers only (bodies are skipped), through a small buffer, so
  // a fetch touches the bytes it returns once.
  uint8_t buffer[8192];
  int64_t buffer_start = 0;
  size_t buffer_len = 0;
  end = std::min(end, size_);
  for (int64_t pos = from; pos + kLogOverhead <= end;) {
    if (pos < buffer_start ||
        pos + int64_t(kScanHeaderBytes) > buffer_start + int64_t(buffer_len)) {
      const size_t want = size_t(std::min<int64_t>(sizeof(buffer), size_ - pos));
      DARUMA_ASSIGN_OR_RETURN(buffer_len,
                              log_file_->ReadAt(uint64_t(pos), std::span<uint8_t>(buffer, want)));
      buffer_start = pos;
      if (buffer_len < size_t(kLogOverhead)) break;
    }
    const uint8_t* h = buffer + (pos - buffer_start);
    const size_t have = buffer_len - size_t(pos - buffer_start);
    const int32_t size_field = int32_t(LoadBe32(h + batch_layout::kLength));
    if (size_field < kMinEntrySizeField) break;  // corrupt, as FileBatchReader stops
    const int64_t entry_size = int64_t(size_field) + kLogOverhead;
    if (pos + entry_size > end) break;  // torn tail, or beyond the limit
    int64_t last = int64_t(LoadBe64(h + batch_layout::kBaseOffset));
    if (have > batch_layout::kMagic && int8_t(h[batch_layout::kMagic]) >= kMagicV2) {
      if (entry_size < kRecordBatchOverhead || have < kScanHeaderBytes) break;
      last += int32_t(LoadBe32(h + batch_layout::kLastOffsetDelta));
    }
    if (visit(LogOffsetPosition{last, int32_t(pos), int32_t(entry_size)})) break;
    pos += entry_size;
  }
  return Status::Ok();
}

Result<int64_t> LogSegment::FirstOffsetOfEntryAt(int64_t position, int64_t floor) const {
  uint8_t header[batch_layout::kMagic + 1];
  DARUMA_ASSIGN_OR_RETURN(size_t n, log_file_->ReadAt(uint64_t(position), header));
  if (n < sizeof header) return floor;
  // A v2 batch names its base offset; a legacy entry only its last offset
  // (a compressed wrapper's first would need decompressing), so the floor.
  if (int8_t(header[batch_layout::kMagic]) >= kMagicV2) {
    return std::max(floor, int64_t(LoadBe64(header + batch_layout::kBaseOffset)));
  }
  return floor;
}

Status LogSegment::CheckLastOffsetIndexEntryTarget() {
  const size_t n = offset_index_->entries();
  if (n == 0) return Status::Ok();
  const OffsetPosition last = offset_index_->Entry(n - 1);
  const int64_t floor = n >= 2 ? offset_index_->Entry(n - 2).offset + 1 : base_offset_;
  std::optional<LogOffsetPosition> found;
  DARUMA_RETURN_IF_ERROR(ScanEntryHeaders(last.position, size_, [&](const LogOffsetPosition& e) {
    found = e;
    return true;
  }));
  if (found && found->position == last.position && found->offset >= floor) {
    if (found->offset <= last.offset) return Status::Ok();  // keyed by last offset (Kafka >= 2.0)
    // Kafka < 2.0 keyed an entry by the FIRST offset of its append (spec
    // §14, §15.2), which lies inside the batch there: such an index is valid
    // and lookups through it land on the same batch.
    DARUMA_ASSIGN_OR_RETURN(int64_t first, FirstOffsetOfEntryAt(last.position, floor));
    if (last.offset >= first) return Status::Ok();
  }
  return Status::Corruption(fmt::format(
      "index file {} slot {}: entry (offset {}, position {}) does not point at a batch "
      "ending in [{}, {}] in {} ({})",
      offset_index_->path(), n - 1, last.offset, last.position, floor, last.offset, log_path(),
      found ? fmt::format("the batch there ends at offset {}", found->offset)
            : std::string("no whole batch starts there")));
}

Result<std::optional<LogOffsetPosition>> LogSegment::TranslateOffset(int64_t offset,
                                                                     int32_t starting_position) {
  std::optional<LogOffsetPosition> found;
  DARUMA_RETURN_IF_ERROR(
      ScanEntryHeaders(starting_position, size_, [&](const LogOffsetPosition& e) {
        if (e.offset < offset) return false;
        found = e;
        return true;
      }));
  return found;
}

Result<int64_t> LogSegment::WholeEntriesEnd(int64_t from, int64_t limit) {
  // Start at the last offset-index entry at or below `limit` (an entry
  // position is always an entry boundary), so only a few headers are read.
  DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, offset_index());
  int64_t scan_from = from;
  size_t lo = 0, hi = oi->entries();
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (oi->Entry(mid).position <= limit) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo > 0) scan_from = std::max<int64_t>(from, oi->Entry(lo - 1).position);
  int64_t end = scan_from;
  DARUMA_RETURN_IF_ERROR(ScanEntryHeaders(scan_from, limit, [&](const LogOffsetPosition& e) {
    end = e.position + e.size;
    return false;
  }));
  return end;
}

Result<std::optional<LogSegment::ReadResult>> LogSegment::Read(int64_t start_offset,
                                                               int32_t max_size,
                                                               int64_t max_position,
                                                               bool min_one_message) {
  ReadResult result;
  DARUMA_ASSIGN_OR_RETURN(auto position, ReadInto(start_offset, max_size, max_position,
                                                  min_one_message, &result.bytes));
  if (!position) return std::optional<ReadResult>();
  result.position = *position;
  return std::optional<ReadResult>(std::move(result));
}

Result<std::optional<int32_t>> LogSegment::ReadInto(int64_t start_offset, int32_t max_size,
                                                    int64_t max_position, bool min_one_message,
                                                    Bytes* out) {
  DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, offset_index());
  OffsetPosition start = oi->Lookup(start_offset);
  DARUMA_ASSIGN_OR_RETURN(auto found, TranslateOffset(start_offset, start.position));
  if (!found) {
    out->clear();
    return std::optional<int32_t>();
  }
  int64_t limit = std::min<int64_t>(max_position, size_);
  int64_t available = limit - found->position;
  if (available <= 0) {
    out->clear();
    return std::optional<int32_t>(found->position);
  }
  int64_t want = std::min<int64_t>(available, max_size);
  if (min_one_message && want < found->size) want = std::min<int64_t>(available, found->size);
  // Whole entries only: find where the last one that fits ends, then read
  // exactly those bytes. (A resize without a prior clear zeroes only bytes
  // beyond the old size.)
  DARUMA_ASSIGN_OR_RETURN(int64_t end, WholeEntriesEnd(found->position, found->position + want));
  out->resize(size_t(end - found->position));
  DARUMA_ASSIGN_OR_RETURN(size_t n, log_file_->ReadAt(uint64_t(found->position), *out));
  if (n != out->size()) {
    return Status::IoError(fmt::format("{}: read {} bytes at position {}, expected {}", log_path(),
                                       n, found->position, out->size()));
  }
  return std::optional<int32_t>(found->position);
}

Result<SegmentRecoveryResult> LogSegment::Recover(const BatchVisitor& on_batch,
                                                  const TruncateHook& before_truncate) {
  return ApplyRecovery(ScanForRecovery(), on_batch, before_truncate);
}

SegmentRecoveryScan LogSegment::ScanForRecovery(std::optional<int64_t> next_segment_base) const {
  return ScanSegmentForRecovery(log_file_.get(), log_path(), base_offset_, size_,
                                config_.index_interval_bytes, next_segment_base);
}

std::unique_ptr<SplitSegmentScan> LogSegment::SplitScanForRecovery(
    std::optional<int64_t> next_segment_base) const {
  return std::make_unique<SplitSegmentScan>(log_file_.get(), log_path(), base_offset_, size_,
                                            config_.index_interval_bytes, next_segment_base);
}

// Kafka resets both indexes before rebuilding them: truncate to zero, then
// preallocate. The rebuilt file holds exactly the rebuilt entries either way
// (ApplyRecovery trims it), so an index whose file already has a free slot for
// each of the `appends` entries the rebuild may add is only emptied in memory:
// no size change, each a journal update that can cost milliseconds on a busy
// disk. The room must also fit a reset index, so an index too full for
// Kafka's reset fails exactly as it would after one. (A crash in between
// leaves stale entries instead of zeros behind the new ones; either way the
// segment lies past the recovery point and is rebuilt again.) A reset that
// is needed leaves the file at its entries' size (IndexFile::Resize with
// extend_file false), as the trim at the end of the rebuild and the load's
// ResizeIndexes do: a second recovery of the same segment then changes no
// file size.
Status LogSegment::ClearIndexesForRebuild(size_t appends) {
  const size_t reset_offset_slots = size_t(config_.segment_index_bytes) / OffsetIndex::kEntrySize;
  const size_t reset_time_slots = size_t(config_.segment_index_bytes) / TimeIndex::kEntrySize;
  // OffsetIndex::Append needs entries() < max_entries() before each append;
  // TimeIndex::MaybeAppend needs entries() + 1 < max_entries() before each call.
  offset_index_->Truncate();
  if (appends > std::min(offset_index_->max_entries(), reset_offset_slots)) {
    DARUMA_RETURN_IF_ERROR(
        offset_index_->Resize(config_.segment_index_bytes, /*extend_file=*/false));
  }
  time_index_->Truncate();
  if (appends + 1 > std::min(time_index_->max_entries(), reset_time_slots)) {
    DARUMA_RETURN_IF_ERROR(time_index_->Resize(config_.segment_index_bytes, /*extend_file=*/false));
  }
  return Status::Ok();
}

Result<SegmentRecoveryResult> LogSegment::ApplyRecovery(const SegmentRecoveryScan& scan,
                                                        const BatchVisitor& on_batch,
                                                        const TruncateHook& before_truncate,
                                                        int32_t resize_indexes_to) {
  // Indexes trimmed at the end (not the active segment's) that are missing
  // are deferred files (IndexFile::Options): created when the segment is
  // flushed or closed, not by the load.
  const bool to_trim = resize_indexes_to <= 0;
  DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, offset_index(to_trim));
  DARUMA_ASSIGN_OR_RETURN(TimeIndex * ti, time_index(to_trim));
  DARUMA_RETURN_IF_ERROR(ClearIndexesForRebuild(scan.index_points.size()));
  DARUMA_RETURN_IF_ERROR(txn_index_->Reset());

  SegmentRecoveryResult result;
  result.valid_bytes = scan.valid_bytes;
  result.batches = scan.batch_count;
  result.next_offset = scan.next_offset;
  result.stop_reason = scan.stop_reason;
  result.stop_kind = scan.stop_kind;
  result.reader_stop = scan.reader_stop;
  result.corrupt_batch = scan.corrupt_batch;
  int64_t max_ts = scan.max_timestamp;
  int64_t shallow_of_max = scan.shallow_offset_of_max;
  // Replay in file order: a batch's index entry precedes its visit, as in a
  // single pass.
  auto point = scan.index_points.begin();
  bool stopped = false;
  for (const SegmentRecoveryScan::Batch& b : scan.batches) {
    for (; point != scan.index_points.end() && point->position <= b.position; ++point) {
      DARUMA_RETURN_IF_ERROR(oi->Append(point->offset, point->position));
      DARUMA_RETURN_IF_ERROR(ti->MaybeAppend(point->max_timestamp, point->shallow_offset_of_max));
    }
    if (!on_batch) continue;
    LogEntry entry{b.position, scan.BytesOf(b), kMagicV2};
    Status visited = on_batch(entry);
    if (visited.ok()) continue;
    // Kafka keeps the batch (validBytes already counts it) and stops on a
    // corrupt/invalid record; any other error aborts the load.
    if (visited.code() != StatusCode::kCorruption && visited.code() != StatusCode::kInvalidRecord) {
      return visited;
    }
    result.valid_bytes = b.end;
    result.batches = b.ordinal + 1;
    result.next_offset = entry.last_offset() + 1;
    result.stop_reason = fmt::format("{}: {}", log_path(), visited.message());
    result.stop_kind = DamageKind::kInvalidRecord;
    result.reader_stop = StopReason::kNone;
    result.corrupt_batch = true;
    max_ts = b.max_timestamp;
    shallow_of_max = b.shallow_offset_of_max;
    stopped = true;
    break;
  }
  if (!stopped) {
    for (; point != scan.index_points.end(); ++point) {
      DARUMA_RETURN_IF_ERROR(oi->Append(point->offset, point->position));
      DARUMA_RETURN_IF_ERROR(ti->MaybeAppend(point->max_timestamp, point->shallow_offset_of_max));
    }
    DARUMA_RETURN_IF_ERROR(scan.error);
  }
  // The aborted transactions on_batch buffered (BufferTxnIndexUpdate), in one write.
  DARUMA_RETURN_IF_ERROR(txn_index_->WritePending());
  result.truncated_bytes = size_ - result.valid_bytes;
  if (result.truncated_bytes > 0) {
    if (before_truncate) DARUMA_RETURN_IF_ERROR(before_truncate(result.valid_bytes, size_));
    DARUMA_RETURN_IF_ERROR(CutLogAt(result.valid_bytes));
  }
  // Kafka's recover trims both indexes.
  auto trim = [resize_indexes_to](auto* index) {
    return resize_indexes_to > 0 ? index->TrimThenResize(resize_indexes_to)
                                 : index->TrimToValidSize();
  };
  DARUMA_RETURN_IF_ERROR(trim(oi));
  DARUMA_RETURN_IF_ERROR(ti->MaybeAppend(max_ts, shallow_of_max, /*skip_full_check=*/true));
  DARUMA_RETURN_IF_ERROR(trim(ti));
  max_timestamp_so_far_ = max_ts;
  shallow_offset_of_max_timestamp_ = shallow_of_max;
  bytes_since_last_index_entry_ = 0;
  return result;
}

Result<int64_t> LogSegment::TruncateDamagedTail(int64_t position) {
  if (position < 0 || position > size_) {
    return Status::InvalidArgument(
        fmt::format("{}: cannot cut at position {} of {} bytes", log_path(), position, size_));
  }
  DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, offset_index());
  DARUMA_ASSIGN_OR_RETURN(TimeIndex * ti, time_index());
  oi->Truncate();
  ti->Truncate();
  const int64_t removed = size_ - position;
  if (removed > 0) DARUMA_RETURN_IF_ERROR(CutLogAt(position));
  return removed;
}

Status LogSegment::CutLogAt(int64_t position) {
  ReleaseAppendWindow();
  DARUMA_RETURN_IF_ERROR(log_file_->Truncate(uint64_t(position)));
  log_unsynced_ = true;
  size_ = position;
  return Status::Ok();
}

Result<int64_t> LogSegment::TruncateTo(int64_t offset) {
  DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, offset_index());
  DARUMA_ASSIGN_OR_RETURN(TimeIndex * ti, time_index());
  DARUMA_ASSIGN_OR_RETURN(auto mapping, TranslateOffset(offset, oi->Lookup(offset).position));
  oi->TruncateTo(offset);
  ti->TruncateTo(offset);
  DARUMA_RETURN_IF_ERROR(txn_index_->TruncateTo(offset));
  DARUMA_RETURN_IF_ERROR(oi->Resize(config_.segment_index_bytes));
  DARUMA_RETURN_IF_ERROR(ti->Resize(config_.segment_index_bytes));
  int64_t truncated = 0;
  if (mapping) {
    truncated = size_ - mapping->position;
    ReleaseAppendWindow();
    DARUMA_RETURN_IF_ERROR(log_file_->Truncate(uint64_t(mapping->position)));
    log_unsynced_ = true;
    size_ = mapping->position;
  }
  if (size_ == 0) {
    created_ms_ = clock_->NowMs();
    rolling_based_timestamp_.reset();
  }
  bytes_since_last_index_entry_ = 0;
  // Reload the largest timestamp from the time index, then scan forward from
  // its entry (Kafka's loadLargestTimestamp).
  TimestampOffset last = ti->LastEntry();
  max_timestamp_so_far_ = last.timestamp;
  shallow_offset_of_max_timestamp_ = last.offset;
  FileBatchReaderOptions ro;
  ro.start_position = uint64_t(oi->Lookup(last.offset).position);
  ro.end_position = uint64_t(size_);
  FileBatchReader reader(log_file_.get(), ro);
  while (auto e = reader.Next()) {
    if (!e->has_batch_header()) break;
    if (e->max_timestamp() > *max_timestamp_so_far_) {
      max_timestamp_so_far_ = e->max_timestamp();
      shallow_offset_of_max_timestamp_ = e->last_offset();
    }
  }
  return truncated;
}

Result<int64_t> LogSegment::ReadNextOffset() {
  DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, offset_index());
  OffsetPosition start = oi->Lookup(oi->LastOffset());
  FileBatchReaderOptions ro;
  ro.start_position = uint64_t(start.position);
  ro.end_position = uint64_t(size_);
  ro.file_size = uint64_t(size_);  // at least: the segment's bytes
  FileBatchReader reader(log_file_.get(), ro);
  int64_t next = base_offset_;
  while (auto e = reader.Next()) {
    if (!e->has_batch_header()) {
      return Status::Corruption(fmt::format("{}: batch at position {} is only {} bytes", log_path(),
                                            e->position, e->size()));
    }
    if (e->last_offset() == std::numeric_limits<int64_t>::max()) {
      return WithDamageKind(
          Status::Corruption(fmt::format("{}: batch at position {} ends at offset {}: no next "
                                         "offset below 2^63",
                                         log_path(), e->position, e->last_offset())),
          DamageKind::kOffsetOverflow);
    }
    next = e->last_offset() + 1;
  }
  DARUMA_RETURN_IF_ERROR(reader.ScanStatus());
  return next;
}

Status LogSegment::OnBecomeInactiveSegment() {
  DARUMA_RETURN_IF_ERROR(LoadMaxTimestampFromTimeIndex());
  DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, offset_index());
  DARUMA_ASSIGN_OR_RETURN(TimeIndex * ti, time_index());
  DARUMA_RETURN_IF_ERROR(
      ti->MaybeAppend(*max_timestamp_so_far_, shallow_offset_of_max_timestamp_, true));
  DARUMA_RETURN_IF_ERROR(oi->TrimToValidSize());
  DARUMA_RETURN_IF_ERROR(ti->TrimToValidSize());
  ReleaseAppendWindow();
  DARUMA_ASSIGN_OR_RETURN(uint64_t physical, log_file_->Size());
  if (physical != uint64_t(size_)) {
    DARUMA_RETURN_IF_ERROR(log_file_->Truncate(uint64_t(size_)));
    log_unsynced_ = true;
  }
  return Status::Ok();
}

Status LogSegment::Flush() {
  // A .log this process synced and has not changed since needs no fsync:
  // every change (append, truncation, trim) sets log_unsynced_, and it starts
  // set, so a file opened with bytes a crash left unsynced is synced once.
  // A flush after loading thus skips the many recovered, untouched segments.
  if (log_unsynced_) DARUMA_RETURN_IF_ERROR(log_file_->Sync());
  log_unsynced_ = false;
  // The time index first: should a crash leave only one of two deferred
  // indexes created (IndexFile), the missing .index makes the next load
  // rebuild both, while a missing .timeindex alone is created empty.
  if (time_index_) DARUMA_RETURN_IF_ERROR(time_index_->Flush());
  if (offset_index_) DARUMA_RETURN_IF_ERROR(offset_index_->Flush());
  return txn_index_->Flush();
}

bool LogSegment::has_deferred_index_files() const {
  return (offset_index_ && offset_index_->deferred()) || (time_index_ && time_index_->deferred());
}

Status LogSegment::CreateDeferredIndexFiles() {
  if (time_index_) DARUMA_RETURN_IF_ERROR(time_index_->CreateIfDeferred());
  if (offset_index_) DARUMA_RETURN_IF_ERROR(offset_index_->CreateIfDeferred());
  return Status::Ok();
}

Status LogSegment::Close() {
  if (max_timestamp_so_far_ && *max_timestamp_so_far_ >= 0 && time_index_) {
    DARUMA_RETURN_IF_ERROR(
        time_index_->MaybeAppend(*max_timestamp_so_far_, shallow_offset_of_max_timestamp_, true));
  }
  // The time index first, as in Flush.
  if (time_index_) DARUMA_RETURN_IF_ERROR(time_index_->Close());
  if (offset_index_) DARUMA_RETURN_IF_ERROR(offset_index_->Close());
  DARUMA_RETURN_IF_ERROR(txn_index_->Close());
  if (log_file_) {
    // Trim a preallocated file first, so the sync below covers its size too.
    ReleaseAppendWindow();
    if (file_may_exceed_size_) {
      DARUMA_ASSIGN_OR_RETURN(uint64_t physical, log_file_->Size());
      if (physical != uint64_t(size_)) {
        DARUMA_RETURN_IF_ERROR(log_file_->Truncate(uint64_t(size_)));
        log_unsynced_ = true;
      }
    }
    if (log_unsynced_) DARUMA_RETURN_IF_ERROR(log_file_->Sync());
    log_unsynced_ = false;
  }
  return Status::Ok();
}

Status LogSegment::ChangeFileSuffixes(const std::string& old_suffix,
                                      const std::string& new_suffix) {
  auto rename_if_exists = [&](const std::string& from, const std::string& to) -> Status {
    if (!fs_->Exists(from)) return Status::Ok();
    return fs_->Rename(from, to);
  };
  const std::string log_from = LogFileName(dir_, base_offset_, old_suffix);
  const std::string log_to = LogFileName(dir_, base_offset_, new_suffix);
  DARUMA_RETURN_IF_ERROR(fs_->Rename(log_from, log_to));
  // Re-open the log file under its new name so later operations follow it.
  DARUMA_ASSIGN_OR_RETURN(log_file_, fs_->Open(log_to, OpenMode::kReadWrite));
  if (offset_index_) {
    DARUMA_RETURN_IF_ERROR(
        offset_index_->RenameTo(OffsetIndexFileName(dir_, base_offset_, new_suffix)));
  } else {
    DARUMA_RETURN_IF_ERROR(rename_if_exists(OffsetIndexFileName(dir_, base_offset_, old_suffix),
                                            OffsetIndexFileName(dir_, base_offset_, new_suffix)));
  }
  if (time_index_) {
    DARUMA_RETURN_IF_ERROR(
        time_index_->RenameTo(TimeIndexFileName(dir_, base_offset_, new_suffix)));
  } else {
    DARUMA_RETURN_IF_ERROR(rename_if_exists(TimeIndexFileName(dir_, base_offset_, old_suffix),
                                            TimeIndexFileName(dir_, base_offset_, new_suffix)));
  }
  DARUMA_RETURN_IF_ERROR(txn_index_->RenameTo(TxnIndexFileName(dir_, base_offset_, new_suffix)));
  suffix_ = new_suffix;
  return Status::Ok();
}

Status LogSegment::DeleteFiles() {
  ReleaseAppendWindow();
  offset_index_.reset();
  time_index_.reset();
  for (const std::string& path : {LogFileName(dir_, base_offset_, suffix_), offset_index_path(),
                                  time_index_path(), txn_index_path()}) {
    Status st = fs_->Remove(path);
    if (!st.ok() && !st.IsNotFound()) return st;
  }
  log_file_.reset();
  return Status::Ok();
}

Result<int64_t> LogSegment::LargestTimestamp() {
  DARUMA_ASSIGN_OR_RETURN(int64_t max_ts, MaxTimestampSoFar());
  if (max_ts >= 0) return max_ts;
  return fs_->ModifiedTimeMs(log_path());
}

Result<bool> LogSegment::ShouldRoll(const RollParams& p) {
  if (!rolling_based_timestamp_ && size_ > 0) {
    FileBatchReaderOptions ro;
    ro.end_position = uint64_t(size_);
    ro.block_size = 4096;
    FileBatchReader reader(log_file_.get(), ro);
    if (auto first = reader.Next()) {
      if (first->has_batch_header()) {
        rolling_based_timestamp_ = first->max_timestamp();
      }
    }
  }
  int64_t waited = (rolling_based_timestamp_ && *rolling_based_timestamp_ >= 0)
                       ? p.max_timestamp_in_messages - *rolling_based_timestamp_
                       : p.now - created_ms_;
  bool reached_roll_ms = waited > p.max_segment_ms - roll_jitter_ms_;
  DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, offset_index());
  DARUMA_ASSIGN_OR_RETURN(TimeIndex * ti, time_index());
  return size_ > int64_t(p.max_segment_bytes) - p.messages_size || (size_ > 0 && reached_roll_ms) ||
         oi->IsFull() || ti->IsFull() || !CanConvertToRelativeOffset(p.max_offset_in_messages);
}

Status LogSegment::ResizeIndexes(int32_t size) {
  DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, offset_index());
  DARUMA_ASSIGN_OR_RETURN(TimeIndex * ti, time_index());
  DARUMA_RETURN_IF_ERROR(oi->Resize(size, /*extend_file=*/false));
  return ti->Resize(size, /*extend_file=*/false);
}

Status LogSegment::SanityCheckTxnIndex() const {
  return txn_index_->SanityCheck();
}

Status LogSegment::CheckIndexEntries() {
  DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, offset_index());
  DARUMA_RETURN_IF_ERROR(oi->CheckEntries(size_));
  DARUMA_ASSIGN_OR_RETURN(TimeIndex * ti, time_index());
  return ti->CheckEntries();
}

}  // namespace daruma
