#include "log/log.h"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <set>

#include "log/log_file_names.h"
#include "record/file_batch_reader.h"
#include "record/record_batch_builder.h"

namespace daruma {

Log::Log(FileSystem* fs, std::string dir, TopicPartition tp, LogConfig config, Clock* clock)
    : fs_(fs),
      dir_(std::move(dir)),
      tp_(std::move(tp)),
      name_(tp_.ToString()),
      config_(config),
      clock_(clock),
      last_flush_ms_(clock->NowMs()) {}

Log::~Log() = default;

Result<std::unique_ptr<Log>> Log::CreateEmpty(FileSystem* fs, const std::string& dir,
                                              const TopicPartition& tp, const LogConfig& config,
                                              Clock* clock, int64_t start_offset) {
  DARUMA_RETURN_IF_ERROR(fs->CreateDir(dir));
  // The new directory's name must survive a power loss before anything in it
  // is acknowledged (the first Flush syncs the files and `dir` itself).
  DARUMA_RETURN_IF_ERROR(fs->SyncDir(ParentDir(dir)));
  LoadedLogParts parts;
  DARUMA_ASSIGN_OR_RETURN(auto segment,
                          LogSegment::Open(fs, dir, start_offset, config, false, "", clock));
  // The indexes now, as at a roll: Kafka creates a new log's index files
  // with its first segment, and both its loader and `daruma check` take a
  // segment without an offset index for a damaged one, also one a partition
  // never written to leaves behind at a clean shutdown. Files left under
  // those names are not this segment's: removed first, as Kafka's roll does.
  for (const std::string& stale : {segment->offset_index_path(), segment->time_index_path()}) {
    if (Status st = fs->Remove(stale); !st.ok() && !st.IsNotFound()) return st;
  }
  DARUMA_RETURN_IF_ERROR(segment->offset_index().status());
  DARUMA_RETURN_IF_ERROR(segment->time_index().status());
  parts.segments.emplace(start_offset, std::move(segment));
  parts.log_start_offset = start_offset;
  parts.recovery_point = start_offset;
  parts.log_end_offset = start_offset;
  DARUMA_ASSIGN_OR_RETURN(
      parts.producer_state,
      ProducerStateManager::Open(tp.ToString(), dir, fs, config.producer_id_expiration_ms));
  parts.producer_state->UpdateMapEndOffset(start_offset);
  DARUMA_ASSIGN_OR_RETURN(
      auto cache, LeaderEpochFileCache::Open(JoinPath(dir, kLeaderEpochCheckpointFileName), fs));
  parts.leader_epoch_cache = std::make_unique<LeaderEpochFileCache>(std::move(cache));
  return FromLoaded(fs, dir, tp, config, clock, std::move(parts));
}

Result<std::unique_ptr<Log>> Log::FromLoaded(FileSystem* fs, const std::string& dir,
                                             const TopicPartition& tp, const LogConfig& config,
                                             Clock* clock, LoadedLogParts parts) {
  if (parts.segments.empty()) {
    return Status::InvalidArgument(fmt::format("{}: a log needs at least one segment", dir));
  }
  std::unique_ptr<Log> log(new Log(fs, dir, tp, config, clock));
  log->file_system_owner_ = std::move(parts.file_system_owner);
  log->segments_ = std::move(parts.segments);
  log->log_start_offset_ = parts.log_start_offset;
  log->log_end_offset_ = parts.log_end_offset;
  log->recovery_point_ = std::max(parts.recovery_point, parts.log_start_offset);
  log->high_watermark_ = parts.log_start_offset;
  log->producer_state_ = std::move(parts.producer_state);
  log->leader_epoch_cache_ = std::move(parts.leader_epoch_cache);
  log->has_deferred_indexes_ = log->AnyDeferredIndexLocked();
  return log;
}

Status Log::CreateDeferredIndexFiles() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!has_deferred_indexes_) return Status::Ok();
  for (auto& [base, segment] : segments_)
    DARUMA_RETURN_IF_ERROR(segment->CreateDeferredIndexFiles());
  has_deferred_indexes_ = false;
  return Status::Ok();
}

bool Log::AnyDeferredIndexLocked() const {
  for (const auto& [base, segment] : segments_) {
    if (segment->has_deferred_index_files()) return true;
  }
  return false;
}

// Validates every batch of an append (spec §2, Kafka's analyzeAndValidateRecords).
Result<Log::BatchFacts> Log::AnalyzeRecords(const std::string& where, ByteSpan records,
                                            const LogConfig& config) {
  BatchFacts facts;
  size_t pos = 0;
  while (pos < records.size()) {
    if (records.size() - pos < size_t(kRecordBatchOverhead)) {
      return Status::Corruption(
          fmt::format("{}: {} trailing bytes at append position {} do not form a batch", where,
                      records.size() - pos, pos));
    }
    int32_t length = int32_t(LoadBe32(records.data() + pos + batch_layout::kLength));
    int64_t size = int64_t(length) + kLogOverhead;
    if (length < kRecordBatchOverhead - kLogOverhead || pos + size_t(size) > records.size()) {
      return Status::Corruption(fmt::format(
          "{}: batch at append position {}: field length {} is invalid", where, pos, length));
    }
    if (size > config.max_message_bytes) {
      return Status::TooLarge(
          fmt::format("{}: batch at append position {} is {} bytes, above max.message.bytes {}",
                      where, pos, size, config.max_message_bytes));
    }
    ByteSpan bytes(records.data() + pos, size_t(size));
    auto parsed = RecordBatchView::Parse(bytes);
    Status valid = parsed.ok() ? parsed->Validate() : parsed.status();
    if (!valid.ok()) {
      return Status(valid.code(), fmt::format("{}: batch at append position {}: {}", where, pos,
                                              valid.message()));
    }
    const RecordBatchView& batch = *parsed;
    if (batch.records_count() < 0) {
      return Status::InvalidRecord(
          fmt::format("{}: batch at append position {}: negative record count", where, pos));
    }
    if (facts.first_offset < 0) facts.first_offset = batch.base_offset();
    if (batch.max_timestamp() > facts.max_timestamp) {
      facts.max_timestamp = batch.max_timestamp();
      facts.shallow_offset_of_max = batch.last_offset();
    }
    facts.last_offset = batch.last_offset();
    facts.batches++;
    pos += size_t(size);
  }
  if (facts.batches == 0) return Status::InvalidArgument(where + ": empty append");
  return facts;
}

namespace {

// Size of the whole entry starting at `p` (its 12-byte prefix included).
size_t EntrySize(const uint8_t* p) {
  return size_t(int32_t(LoadBe32(p + batch_layout::kLength))) + kLogOverhead;
}

}  // namespace

Result<LogAppendInfo> Log::AppendAsLeader(ByteSpan records, int32_t leader_epoch,
                                          AppendOrigin origin) {
  Bytes copy(records.begin(), records.end());
  return AppendAsLeaderInPlace(copy, leader_epoch, origin);
}

Result<LogAppendInfo> Log::AppendAsLeaderInPlace(std::span<uint8_t> records, int32_t leader_epoch,
                                                 AppendOrigin origin) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string& where = name_;
  DARUMA_ASSIGN_OR_RETURN(BatchFacts facts, AnalyzeRecords(where, records, config_));
  const int64_t now = clock_->NowMs();
  // Kafka's LogValidator, in place: offsets from the log end offset, the
  // leader epoch, and LogAppendTime (on every batch, a transaction marker
  // too). Base offset and leader epoch are not covered by the CRC; the max
  // timestamp is (so the CRC is recomputed).
  int64_t next = log_end_offset_;
  facts.first_offset = next;
  facts.max_timestamp = -1;
  for (size_t pos = 0; pos < records.size();) {
    std::span<uint8_t> batch(records.data() + pos, EntrySize(records.data() + pos));
    SetBatchBaseOffset(batch, next);
    SetBatchPartitionLeaderEpoch(batch, leader_epoch);
    RecordBatchView view(batch);
    if (config_.log_append_time) {
      StoreBe64(batch.data() + batch_layout::kMaxTimestamp, uint64_t(now));
      batch[batch_layout::kAttributes + 1] |= batch_attributes::kLogAppendTime;
      RewriteBatchCrc(batch);
    }
    if (view.max_timestamp() > facts.max_timestamp) {
      facts.max_timestamp = view.max_timestamp();
      facts.shallow_offset_of_max = view.last_offset();
    }
    next = view.next_offset();
    pos += batch.size();
  }
  facts.last_offset = next - 1;
  const int64_t log_append_time = config_.log_append_time ? now : -1;
  return AppendLocked(records, facts, origin, log_append_time);
}

Result<LogAppendInfo> Log::AppendAsFollower(ByteSpan records) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string& where = name_;
  DARUMA_ASSIGN_OR_RETURN(BatchFacts facts, AnalyzeRecords(where, records, config_));
  int64_t next = log_end_offset_;
  for (size_t pos = 0; pos < records.size();) {
    RecordBatchView view(ByteSpan(records.data() + pos, EntrySize(records.data() + pos)));
    if (view.base_offset() < next) {
      return Status::InvalidOffset(
          fmt::format("{}: follower append at offset {} is below the expected offset {}", where,
                      view.base_offset(), next));
    }
    next = view.next_offset();
    pos += view.size();
  }
  return AppendLocked(records, facts, AppendOrigin::kReplication, -1);
}

Result<LogAppendInfo> Log::AppendLocked(ByteSpan records, const BatchFacts& facts,
                                        AppendOrigin origin, int64_t log_append_time) {
  DARUMA_RETURN_IF_ERROR(write_failure_);
  LogAppendInfo info;
  info.first_offset = facts.first_offset;
  info.last_offset = facts.last_offset;
  info.max_timestamp = facts.max_timestamp;
  info.shallow_offset_of_max_timestamp = facts.shallow_offset_of_max;
  info.log_append_time = log_append_time;
  info.valid_bytes = int32_t(records.size());
  info.batches = facts.batches;

  // Producer state: duplicates are acknowledged with their original offsets;
  // sequence/epoch violations reject the whole append.
  std::map<int64_t, ProducerAppendInfo> updates;
  std::vector<CompletedTxn> completed;
  for (size_t pos = 0; pos < records.size();) {
    RecordBatchView batch(ByteSpan(records.data() + pos, EntrySize(records.data() + pos)));
    pos += batch.size();
    if (!batch.has_producer_id()) continue;
    if (origin == AppendOrigin::kClient && facts.batches == 1) {
      if (auto dup = producer_state_->FindDuplicateBatch(batch)) {
        info.duplicate = true;
        info.first_offset = dup->FirstOffset();
        info.last_offset = dup->last_offset;
        info.log_start_offset = log_start_offset_;
        return info;
      }
    }
    auto it = updates.find(batch.producer_id());
    if (it == updates.end()) {
      it = updates
               .emplace(batch.producer_id(),
                        producer_state_->PrepareUpdate(batch.producer_id(), origin))
               .first;
    }
    DARUMA_ASSIGN_OR_RETURN(auto done, it->second.Append(batch));
    if (done) completed.push_back(*done);
  }

  if (Status st = MaybeRoll(int32_t(records.size()), info); !st.ok()) return FailWrites(st);

  for (size_t pos = 0; pos < records.size();) {
    RecordBatchView batch(ByteSpan(records.data() + pos, EntrySize(records.data() + pos)));
    pos += batch.size();
    int32_t epoch = batch.partition_leader_epoch();
    auto latest = leader_epoch_cache_->LatestEpoch();
    if (epoch >= 0 && (!latest || epoch > *latest)) {
      DARUMA_RETURN_IF_ERROR(leader_epoch_cache_->Assign(epoch, batch.base_offset()));
    }
  }

  // From here on a failure leaves the files ahead of the memory (the
  // records may be in the .log without their index entry): no more writes.
  LogSegment* segment = active();
  const int64_t size_before = segment->size();
  Status st = segment->Append(info.last_offset, info.max_timestamp,
                              info.shallow_offset_of_max_timestamp, records);
  if (!st.ok()) return FailWrites(st, /*wrote_bytes=*/segment->size() != size_before);
  log_end_offset_ = info.last_offset + 1;

  for (auto& [pid, update] : updates) {
    if (st = producer_state_->Update(update); !st.ok()) return FailWrites(st);
  }
  for (const CompletedTxn& txn : completed) {
    int64_t lso = producer_state_->LastStableOffset(txn);
    if (txn.is_aborted) {
      st = active()->UpdateTxnIndex(
          AbortedTxn{txn.producer_id, txn.first_offset, txn.last_offset, lso});
      if (!st.ok()) return FailWrites(st);
    }
    if (st = producer_state_->CompleteTxn(txn); !st.ok()) return FailWrites(st);
  }
  producer_state_->UpdateMapEndOffset(log_end_offset_);

  unflushed_messages_ += info.last_offset - info.first_offset + 1;
  if (unflushed_messages_ >= config_.flush_messages) {
    if (st = FlushLocked(log_end_offset_); !st.ok()) return st;
  }
  info.log_start_offset = log_start_offset_;
  return info;
}

Status Log::MaybeRoll(int32_t messages_size, const LogAppendInfo& info) {
  LogSegment::RollParams p{config_.MaxSegmentMs(), config_.segment_bytes, info.max_timestamp,
                           info.last_offset,       messages_size,         clock_->NowMs()};
  DARUMA_ASSIGN_OR_RETURN(bool roll, active()->ShouldRoll(p));
  if (!roll) return Status::Ok();
  // Kafka rolls at the append's first offset, or lower when the append alone
  // would overflow the relative offsets of a segment starting there.
  int64_t roll_offset = info.first_offset;
  if (info.last_offset - roll_offset > std::numeric_limits<int32_t>::max()) {
    roll_offset = info.last_offset - std::numeric_limits<int32_t>::max();
  }
  return RollLocked(roll_offset);
}

Status Log::Roll(std::optional<int64_t> expected_next_offset) {
  std::lock_guard<std::mutex> lock(mu_);
  return RollLocked(expected_next_offset);
}

Status Log::RollLocked(std::optional<int64_t> expected_next_offset) {
  const int64_t new_offset = std::max(expected_next_offset.value_or(0), log_end_offset_);
  auto existing = segments_.find(new_offset);
  if (existing != segments_.end()) {
    if (existing->second->size() == 0 && existing->first == active()->base_offset()) {
      return Status::Ok();  // already rolled here and nothing was appended since
    }
    return Status::AlreadyExists(
        fmt::format("{}: trying to roll a new segment at offset {} which already exists",
                    tp_.ToString(), new_offset));
  }
  DARUMA_RETURN_IF_ERROR(active()->OnBecomeInactiveSegment());
  DARUMA_ASSIGN_OR_RETURN(auto segment,
                          LogSegment::Open(fs_, dir_, new_offset, config_, false, "", clock_));
  // Open the indexes now so the new segment's files exist (preallocated).
  DARUMA_RETURN_IF_ERROR(segment->offset_index().status());
  DARUMA_RETURN_IF_ERROR(segment->time_index().status());
  segments_.emplace(new_offset, std::move(segment));
  producer_state_->UpdateMapEndOffset(new_offset);
  DARUMA_RETURN_IF_ERROR(producer_state_->TakeSnapshot(/*sync=*/false).status());
  // Kafka flushes the old segments asynchronously after a roll, then moves
  // the recovery point to the new segment's base (FlushAfterRoll).
  if (roll_flush_scheduler_ && roll_flush_scheduler_(new_offset)) return Status::Ok();
  return FlushLocked(new_offset);
}

Status Log::FlushAfterRoll(int64_t offset) {
  std::vector<std::string> paths;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::min(offset, log_end_offset_) <= recovery_point_) return Status::Ok();
    for (auto& [base, segment] : segments_) {
      if (base >= offset) break;
      auto next = segments_.upper_bound(base);
      if (next != segments_.end() && next->first <= recovery_point_) continue;
      paths.push_back(segment->log_path());
      paths.push_back(segment->offset_index_path());
      paths.push_back(segment->time_index_path());
    }
  }
  // Syncing through a second descriptor writes back the same page cache
  // (fsync is per inode, mapped pages included). A file that no longer opens
  // was removed or renamed by retention, truncation or cleaning meanwhile;
  // Flush below decides from the segments as they are then.
  for (const std::string& path : paths) {
    Result<std::unique_ptr<File>> file = fs_->Open(path, OpenMode::kRead);
    if (!file.ok()) continue;
    DARUMA_RETURN_IF_ERROR((*file)->Sync());
  }
  return Flush(offset);
}

void Log::SetRollFlushScheduler(std::function<bool(int64_t offset)> schedule) {
  std::lock_guard<std::mutex> lock(mu_);
  roll_flush_scheduler_ = std::move(schedule);
}

Status Log::FailWrites(const Status& st, bool wrote_bytes) {
  // Out of descriptors, a file could not be opened: unless this write had
  // already put bytes in the .log, nothing changed on disk, and the same
  // write can succeed once descriptors are free again.
  if (IsTooManyOpenFiles(st) && !wrote_bytes) return st;
  if (write_failure_.ok()) {
    write_failure_ = Status(st.code(), fmt::format("{}: writes stopped after a failed write at log "
                                                   "end offset {}: {}",
                                                   name_, log_end_offset_, st.message()));
    {
      std::lock_guard<std::mutex> failure_lock(failure_mu_);
      reported_failure_ = write_failure_;
    }
    if (write_failure_listener_) write_failure_listener_(write_failure_);
  }
  return write_failure_;
}

Status Log::write_failure() const {
  std::lock_guard<std::mutex> lock(failure_mu_);
  return reported_failure_;
}

void Log::SetWriteFailureListener(std::function<void(const Status&)> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  write_failure_listener_ = std::move(listener);
}

bool Log::LeaveUnsyncedUntilFlush(std::vector<std::string> files) {
  std::lock_guard<std::mutex> lock(mu_);
  // The next unclean start recovers every segment from the one holding the
  // recovery point (the first if none), rebuilding its indexes, and first
  // deletes the snapshots above that segment's base (Kafka's
  // truncateAndReload before recovering a segment).
  auto holding_base_of = [this](int64_t point) {
    auto holding = segments_.upper_bound(point);
    if (holding != segments_.begin()) --holding;
    return holding->first;
  };
  std::vector<std::pair<int64_t, bool>> named;  // each file's offset, and whether a snapshot
  // Bases of the segments whose indexes are in `files`, or deferred: the load
  // rebuilt them and created no file (IndexFile), which a flush creates.
  std::set<int64_t> rebuilt;
  for (const auto& [base, segment] : segments_) {
    if (segment->has_deferred_index_files()) rebuilt.insert(base);
  }
  for (const std::string& path : files) {
    const std::string name = BaseName(path);
    Result<int64_t> offset = OffsetFromFileName(name);
    if (!offset.ok()) return false;
    const bool snapshot = HasSuffix(name, kProducerSnapshotFileSuffix);
    named.emplace_back(*offset, snapshot);
    if (!snapshot) rebuilt.insert(*offset);
  }
  int64_t point = recovery_point_;
  int64_t holding_base = holding_base_of(point);
  // Indexes rebuilt below that segment (they were missing or corrupt, so the
  // load recovered their segments): the point goes down to the lowest such
  // segment instead of a sync of each, provided the load rebuilt every
  // segment from there on too. Then the next unclean start rebuilds them all
  // again and redoes no more than this load did; the next flush syncs them
  // and moves the point back up. Never below the log start offset (the
  // point's invariant): a segment below it is not rebuilt, so not left.
  if (!rebuilt.empty() && *rebuilt.begin() < holding_base) {
    const int64_t lowered = std::max(*rebuilt.begin(), log_start_offset_);
    const int64_t lowered_base = holding_base_of(lowered);
    for (auto it = segments_.find(lowered_base); it != segments_.end() && it->first < holding_base;
         ++it) {
      if (rebuilt.count(it->first) == 0) return false;
    }
    point = lowered;
    holding_base = lowered_base;
  }
  for (const auto& [offset, snapshot] : named) {
    const bool rebuilt_next_time = snapshot ? offset > holding_base : offset >= holding_base;
    if (!rebuilt_next_time) return false;
  }
  recovery_point_ = point;
  unsynced_load_files_ = std::move(files);
  return true;
}

// Before anything may move the recovery point past them (a flush, Close).
// A file gone since was removed by retention, truncation or cleaning:
// nothing of it is left to sync.
Status Log::SyncUnsyncedLoadFilesLocked() {
  for (const std::string& path : unsynced_load_files_) {
    Status st = fs_->SyncFile(path);
    if (!st.ok() && !st.IsNotFound()) return st;
  }
  unsynced_load_files_.clear();
  return Status::Ok();
}

Status Log::Flush(int64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  return FlushLocked(offset);
}

// A failed fsync cannot be retried (the kernel may have dropped the dirty
// pages and report the next fsync clean), so it stops all writes.
Status Log::FlushLocked(int64_t offset) {
  DARUMA_RETURN_IF_ERROR(write_failure_);
  if (Status st = SyncUnsyncedLoadFilesLocked(); !st.ok()) return FailWrites(st);
  offset = std::min(offset, log_end_offset_);
  if (offset <= recovery_point_ && !has_deferred_indexes_) return Status::Ok();
  // Segments below the recovery point are synced already, except those whose
  // indexes a load left deferred (IndexFile): the flush creates and syncs
  // them too. Invariant: once a flush returns, no segment below the recovery
  // point has a deferred index, so a checkpointed point never vouches for an
  // index file a crash could leave empty or half written (until then the
  // load kept the point below them, LeaveUnsyncedUntilFlush, or synced them).
  for (auto& [base, segment] : segments_) {
    if (base >= offset) break;
    auto next = segments_.upper_bound(base);
    int64_t segment_end = next == segments_.end() ? log_end_offset_ : next->first;
    if (segment_end <= recovery_point_ && !segment->has_deferred_index_files()) continue;
    if (Status st = segment->Flush(); !st.ok()) return FailWrites(st);
  }
  if (has_deferred_indexes_) has_deferred_indexes_ = AnyDeferredIndexLocked();
  if (Status st = producer_state_->SyncPendingSnapshots(); !st.ok()) return FailWrites(st);
  if (Status st = fs_->SyncDir(dir_); !st.ok()) return FailWrites(st);
  recovery_point_ = std::max(recovery_point_, offset);
  if (offset >= log_end_offset_) unflushed_messages_ = 0;
  last_flush_ms_ = clock_->NowMs();
  if (flush_listener_) flush_listener_();
  return Status::Ok();
}

Result<bool> Log::TruncateTo(int64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  if (offset < 0) {
    return Status::InvalidArgument(
        fmt::format("{}: cannot truncate to negative offset {}", tp_.ToString(), offset));
  }
  if (offset >= log_end_offset_) return false;
  if (offset < log_start_offset_) {
    DARUMA_RETURN_IF_ERROR(TruncateFullyAndStartAtLocked(offset));
    return true;
  }
  // Kafka (LocalLog.truncateTo): delete the segments whose base offset is
  // above the offset, then truncate the one containing it (it may become empty).
  while (segments_.size() > 1 && segments_.rbegin()->first > offset) {
    auto node = segments_.extract(std::prev(segments_.end()));
    DARUMA_RETURN_IF_ERROR(node.mapped()->Close());
    DARUMA_RETURN_IF_ERROR(node.mapped()->DeleteFiles());
  }
  DARUMA_RETURN_IF_ERROR(active()->TruncateTo(offset).status());
  log_end_offset_ = offset;
  recovery_point_ = std::min(recovery_point_, log_end_offset_);
  high_watermark_ = std::min(high_watermark_, log_end_offset_);
  leader_epoch_cache_->TruncateFromEnd(log_end_offset_);
  DARUMA_RETURN_IF_ERROR(leader_epoch_cache_->Flush());
  DARUMA_RETURN_IF_ERROR(
      producer_state_->TruncateAndReload(log_start_offset_, log_end_offset_, clock_->NowMs()));
  DARUMA_RETURN_IF_ERROR(ReplayProducerStateLocked());
  return true;
}

Status Log::ReplayProducerStateLocked() {
  const int64_t from = producer_state_->MapEndOffset();
  if (from >= log_end_offset_) return Status::Ok();
  auto it = segments_.upper_bound(from);
  if (it != segments_.begin()) --it;
  for (; it != segments_.end(); ++it) {
    LogSegment* segment = it->second.get();
    FileBatchReaderOptions ro;
    ro.end_position = uint64_t(segment->size());
    FileBatchReader reader(segment->log_file(), ro);
    while (auto e = reader.Next()) {
      if (!e->is_v2() || e->last_offset() < from) continue;
      if (e->prefix_offset() >= log_end_offset_) return Status::Ok();
      DARUMA_ASSIGN_OR_RETURN(auto done, producer_state_->ApplyBatch(e->batch()));
      if (done) DARUMA_RETURN_IF_ERROR(producer_state_->CompleteTxn(*done));
      producer_state_->UpdateMapEndOffset(e->last_offset() + 1);
    }
    if (reader.stop_reason() == StopReason::kIoError) return reader.io_status();
  }
  producer_state_->UpdateMapEndOffset(log_end_offset_);
  return Status::Ok();
}

Status Log::TruncateFullyAndStartAt(int64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  return TruncateFullyAndStartAtLocked(offset);
}

Status Log::TruncateFullyAndStartAtLocked(int64_t offset) {
  if (offset < 0) {
    return Status::InvalidArgument(
        fmt::format("{}: cannot restart the log at negative offset {}", tp_.ToString(), offset));
  }
  while (!segments_.empty()) {
    auto node = segments_.extract(segments_.begin());
    DARUMA_RETURN_IF_ERROR(node.mapped()->Close());
    DARUMA_RETURN_IF_ERROR(node.mapped()->DeleteFiles());
  }
  DARUMA_ASSIGN_OR_RETURN(auto fresh,
                          LogSegment::Open(fs_, dir_, offset, config_, false, "", clock_));
  DARUMA_RETURN_IF_ERROR(fresh->offset_index().status());
  DARUMA_RETURN_IF_ERROR(fresh->time_index().status());
  segments_.emplace(offset, std::move(fresh));
  DARUMA_RETURN_IF_ERROR(leader_epoch_cache_->ClearAndFlush());
  DARUMA_RETURN_IF_ERROR(producer_state_->TruncateFullyAndStartAt(offset));
  log_start_offset_ = log_end_offset_ = recovery_point_ = high_watermark_ = offset;
  unflushed_messages_ = 0;
  return Status::Ok();
}

Status Log::Close() {
  std::lock_guard<std::mutex> lock(mu_);
  DARUMA_RETURN_IF_ERROR(write_failure_);  // a snapshot at this LEO would be a lie
  producer_state_->UpdateMapEndOffset(log_end_offset_);
  DARUMA_RETURN_IF_ERROR(producer_state_->TakeSnapshot(/*sync=*/true).status());
  DARUMA_RETURN_IF_ERROR(producer_state_->SyncPendingSnapshots());
  DARUMA_RETURN_IF_ERROR(SyncUnsyncedLoadFilesLocked());
  // Indexes a load rebuilt and left deferred are created now: their names
  // must be durable before the recovery point moves past them, as after a
  // flush (the file syncs do not promise that everywhere).
  bool created_files = false;
  for (auto& [base, segment] : segments_) {
    created_files = created_files || segment->has_deferred_index_files();
    DARUMA_RETURN_IF_ERROR(segment->Close());
  }
  if (created_files) DARUMA_RETURN_IF_ERROR(fs_->SyncDir(dir_));
  if (leader_epoch_cache_->dirty()) DARUMA_RETURN_IF_ERROR(leader_epoch_cache_->Flush());
  recovery_point_ = log_end_offset_;
  return Status::Ok();
}

void Log::UpdateHighWatermark(int64_t hw) {
  std::lock_guard<std::mutex> lock(mu_);
  high_watermark_ = std::clamp(hw, log_start_offset_, log_end_offset_);
  producer_state_->OnHighWatermarkUpdated(high_watermark_);
}

Status Log::MaybeIncrementLogStartOffset(int64_t new_start) {
  std::lock_guard<std::mutex> lock(mu_);
  return MaybeIncrementLogStartOffsetLocked(new_start);
}

Status Log::MaybeIncrementLogStartOffsetLocked(int64_t new_start) {
  if (new_start <= log_start_offset_) return Status::Ok();
  if (new_start > high_watermark_) {
    return Status::OutOfRange(
        fmt::format("{}: cannot raise the log start offset to {} above the high watermark {}",
                    tp_.ToString(), new_start, high_watermark_));
  }
  log_start_offset_ = new_start;
  recovery_point_ = std::max(recovery_point_, new_start);
  leader_epoch_cache_->TruncateFromStart(new_start);
  producer_state_->OnLogStartOffsetIncremented(new_start);
  return leader_epoch_cache_->Flush();
}

int64_t Log::LastStableOffsetLocked() const {
  auto fuo = producer_state_->FirstUnstableOffset();
  if (fuo && *fuo < high_watermark_) return std::max(*fuo, log_start_offset_);
  return high_watermark_;
}

Result<FetchDataInfo> Log::Read(int64_t start_offset, int32_t max_bytes, FetchIsolation isolation,
                                bool min_one_message) {
  FetchDataInfo out;
  DARUMA_RETURN_IF_ERROR(ReadInto(start_offset, max_bytes, isolation, min_one_message, &out));
  return out;
}

Status Log::ReadInto(int64_t start_offset, int32_t max_bytes, FetchIsolation isolation,
                     bool min_one_message, FetchDataInfo* out_info) {
  std::lock_guard<std::mutex> lock(mu_);
  FetchDataInfo& out = *out_info;
  out.aborted_transactions.clear();
  // out.records keeps its size until a segment read resizes it (a resize
  // that does not grow writes nothing); every other path clears it.
  if (start_offset < log_start_offset_ || start_offset > log_end_offset_) {
    out.records.clear();
    return Status::OutOfRange(fmt::format("{}: offset {} is out of range [{}, {}]", tp_.ToString(),
                                          start_offset, log_start_offset_, log_end_offset_));
  }
  int64_t upper = log_end_offset_;
  if (isolation == FetchIsolation::kHighWatermark) upper = high_watermark_;
  if (isolation == FetchIsolation::kTxnCommitted) upper = LastStableOffsetLocked();
  out.fetch_offset = start_offset;
  if (start_offset >= upper) {
    out.records.clear();
    return Status::Ok();
  }
  auto it = segments_.upper_bound(start_offset);
  if (it != segments_.begin()) --it;
  for (; it != segments_.end(); ++it) {
    LogSegment* segment = it->second.get();
    // Bound the read at the position of `upper` when it lies in this segment
    // (below the log end: the log end is the active segment's size), found
    // from the offset index as a fetch position is.
    int64_t max_position = segment->size();
    auto next = std::next(it);
    if (upper < log_end_offset_ && (next == segments_.end() || next->first > upper)) {
      DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, segment->offset_index());
      DARUMA_ASSIGN_OR_RETURN(auto upper_pos,
                              segment->TranslateOffset(upper, oi->Lookup(upper).position));
      if (upper_pos) max_position = upper_pos->position;
    }
    DARUMA_ASSIGN_OR_RETURN(auto read, segment->ReadInto(start_offset, max_bytes, max_position,
                                                         min_one_message, &out.records));
    // The batch holding start_offset is here: return what fits (possibly
    // nothing when max_bytes is below its size), never a later batch.
    if (read) break;
    if (next == segments_.end() || next->first >= upper) break;
  }
  if (isolation == FetchIsolation::kTxnCommitted && !out.records.empty()) {
    for (auto& [base, segment] : segments_) {
      auto next = segments_.upper_bound(base);
      if (next != segments_.end() && next->first <= start_offset) continue;
      DARUMA_ASSIGN_OR_RETURN(auto found,
                              segment->txn_index()->CollectAbortedTxns(start_offset, upper));
      out.aborted_transactions.insert(out.aborted_transactions.end(), found.aborted.begin(),
                                      found.aborted.end());
      if (found.is_complete) break;
    }
  }
  return Status::Ok();
}

Result<std::optional<std::pair<int64_t, int64_t>>> Log::FetchOffsetByTimestamp(int64_t ts) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [base, segment] : segments_) {
    DARUMA_ASSIGN_OR_RETURN(int64_t largest, segment->MaxTimestampSoFar());
    if (largest < ts) continue;
    DARUMA_ASSIGN_OR_RETURN(TimeIndex * ti, segment->time_index());
    DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, segment->offset_index());
    TimestampOffset entry = ti->Lookup(ts);
    int32_t start = oi->Lookup(std::max(entry.offset, base)).position;
    FileBatchReaderOptions ro;
    ro.start_position = uint64_t(start);
    ro.end_position = uint64_t(segment->size());
    FileBatchReader reader(segment->log_file(), ro);
    while (auto e = reader.Next()) {
      if (e->max_timestamp() < ts) continue;
      if (!e->is_v2())
        return std::optional<std::pair<int64_t, int64_t>>(
            std::make_pair(e->max_timestamp(), e->last_offset()));
      auto records = e->batch().DecodeRecords(MaxDecompressedBytesFor(config_.max_message_bytes));
      if (!records.ok()) return records.status();
      for (const auto& r : *records) {
        if (r.timestamp >= ts && r.offset >= log_start_offset_) {
          return std::optional<std::pair<int64_t, int64_t>>(std::make_pair(r.timestamp, r.offset));
        }
      }
    }
  }
  return std::optional<std::pair<int64_t, int64_t>>();
}

Result<std::optional<std::pair<int64_t, int64_t>>> Log::FetchMaxTimestampOffset() {
  using Found = std::optional<std::pair<int64_t, int64_t>>;
  std::lock_guard<std::mutex> lock(mu_);
  LogSegment* latest = nullptr;
  int64_t largest = -1;
  for (auto& [base, segment] : segments_) {
    DARUMA_ASSIGN_OR_RETURN(int64_t ts, segment->MaxTimestampSoFar());
    if (latest == nullptr || ts > largest) {
      latest = segment.get();
      largest = ts;
    }
  }
  if (latest == nullptr) return Found();
  FileBatchReaderOptions ro;
  ro.end_position = uint64_t(latest->size());
  FileBatchReader reader(latest->log_file(), ro);
  while (auto e = reader.Next()) {
    if (e->max_timestamp() != largest) continue;
    // A legacy entry, or a LogAppendTime batch (every record carries the
    // batch's timestamp): the first offset it holds.
    if (!e->is_v2()) return Found(std::make_pair(largest, e->last_offset()));
    if (e->batch().timestamp_type() == TimestampType::kLogAppendTime) {
      return Found(std::make_pair(largest, e->batch().base_offset()));
    }
    auto records = e->batch().DecodeRecords(MaxDecompressedBytesFor(config_.max_message_bytes));
    if (!records.ok()) return records.status();
    for (const auto& r : *records) {
      if (r.timestamp == largest) return Found(std::make_pair(r.timestamp, r.offset));
    }
  }
  return Found();
}

int64_t Log::log_start_offset() const {
  std::lock_guard<std::mutex> l(mu_);
  return log_start_offset_;
}
int64_t Log::log_end_offset() const {
  std::lock_guard<std::mutex> l(mu_);
  return log_end_offset_;
}
int64_t Log::high_watermark() const {
  std::lock_guard<std::mutex> l(mu_);
  return high_watermark_;
}
int64_t Log::recovery_point() const {
  std::lock_guard<std::mutex> l(mu_);
  return recovery_point_;
}
int64_t Log::last_stable_offset() const {
  std::lock_guard<std::mutex> l(mu_);
  return LastStableOffsetLocked();
}
std::optional<int64_t> Log::first_unstable_offset() const {
  std::lock_guard<std::mutex> l(mu_);
  return producer_state_->FirstUnstableOffset();
}
int64_t Log::size_in_bytes() const {
  std::lock_guard<std::mutex> l(mu_);
  int64_t total = 0;
  for (auto& [base, s] : segments_) total += s->size();
  return total;
}
size_t Log::num_segments() const {
  std::lock_guard<std::mutex> l(mu_);
  return segments_.size();
}
std::vector<int64_t> Log::segment_base_offsets() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<int64_t> out;
  for (auto& [base, s] : segments_) out.push_back(base);
  return out;
}
int64_t Log::active_segment_base() const {
  std::lock_guard<std::mutex> l(mu_);
  return active()->base_offset();
}
int64_t Log::active_segment_size() const {
  std::lock_guard<std::mutex> l(mu_);
  return active()->size();
}
std::vector<EpochEntry> Log::leader_epochs() const {
  std::lock_guard<std::mutex> l(mu_);
  return leader_epoch_cache_->entries();
}
std::optional<int32_t> Log::latest_leader_epoch() const {
  std::lock_guard<std::mutex> l(mu_);
  return leader_epoch_cache_->LatestEpoch();
}
std::vector<AbortedTxn> Log::AllAbortedTransactions() const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<AbortedTxn> out;
  for (auto& [base, s] : segments_) {
    auto txns = s->txn_index()->AllAbortedTxns();
    if (txns.ok()) out.insert(out.end(), txns->begin(), txns->end());
  }
  return out;
}
size_t Log::active_producer_count() const {
  std::lock_guard<std::mutex> l(mu_);
  return producer_state_->ActiveProducers().size();
}
std::vector<ProducerSnapshotEntry> Log::ActiveProducerEntries() const {
  std::lock_guard<std::mutex> l(mu_);
  return producer_state_->SnapshotEntries();
}
EpochEntry Log::EndOffsetForEpoch(int32_t requested_epoch) const {
  std::lock_guard<std::mutex> l(mu_);
  return leader_epoch_cache_->EndOffsetFor(requested_epoch, log_end_offset_);
}
std::vector<LogSegment*> Log::segments_for_inspection() {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<LogSegment*> out;
  for (auto& [base, s] : segments_) out.push_back(s.get());
  return out;
}

// ---- Log cleaner support (owner: log_cleaner.h; spec §11.6) ---------------

Result<Log::CleanerView> Log::ViewForCleaner() {
  std::lock_guard<std::mutex> l(mu_);
  CleanerView view;
  view.log_start_offset = log_start_offset_;
  view.log_end_offset = log_end_offset_;
  view.last_stable_offset = LastStableOffsetLocked();
  for (auto& [base, segment] : segments_) {
    CleanerSegmentView s;
    s.segment = segment.get();
    s.base_offset = base;
    s.size = segment->size();
    DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, segment->offset_index());
    DARUMA_ASSIGN_OR_RETURN(TimeIndex * ti, segment->time_index());
    s.offset_index_bytes = int64_t(oi->entries()) * 8;
    s.time_index_bytes = int64_t(ti->entries()) * 12;
    DARUMA_ASSIGN_OR_RETURN(s.largest_timestamp, segment->LargestTimestamp());
    DARUMA_ASSIGN_OR_RETURN(s.last_modified_ms, fs_->ModifiedTimeMs(segment->log_path()));
    view.segments.push_back(s);
  }
  return view;
}

std::map<int64_t, Log::ProducerLastRecord> Log::LastRecordsOfActiveProducers() const {
  std::lock_guard<std::mutex> l(mu_);
  std::map<int64_t, ProducerLastRecord> out;
  for (const auto& [pid, entry] : producer_state_->ActiveProducers()) {
    ProducerLastRecord last;
    if (entry.LastDataOffset() >= 0) last.last_data_offset = entry.LastDataOffset();
    last.producer_epoch = entry.producer_epoch();
    out.emplace(pid, last);
  }
  return out;
}

Result<std::vector<AbortedTxn>> Log::CollectAbortedTransactions(int64_t start,
                                                                int64_t upper) const {
  std::lock_guard<std::mutex> l(mu_);
  std::vector<AbortedTxn> out;
  auto it = segments_.upper_bound(start);
  if (it != segments_.begin()) --it;
  for (; it != segments_.end(); ++it) {
    DARUMA_ASSIGN_OR_RETURN(auto found, it->second->txn_index()->CollectAbortedTxns(start, upper));
    out.insert(out.end(), found.aborted.begin(), found.aborted.end());
    if (found.is_complete) break;
  }
  return out;
}

Result<Log::RetentionResult> Log::ReplaceSegments(
    std::vector<std::unique_ptr<LogSegment>> new_segments, const std::vector<int64_t>& old_bases) {
  std::lock_guard<std::mutex> l(mu_);
  if (new_segments.empty()) return Status::InvalidArgument(name_ + ": no segments to swap in");
  for (int64_t base : old_bases) {
    if (!segments_.count(base) || base == active()->base_offset()) {
      return Status::InvalidArgument(fmt::format(
          "{}: segment {} to replace is no longer an inactive segment of the log", name_, base));
    }
  }
  std::sort(new_segments.begin(), new_segments.end(),
            [](const auto& a, const auto& b) { return a->base_offset() < b->base_offset(); });
  std::vector<std::unique_ptr<LogSegment>> old;
  // Step 2: `.cleaned` -> `.swap`, highest base first, so a crash leaves the
  // loader a `.cleaned` file at or below every `.swap` it must discard.
  for (auto it = new_segments.rbegin(); it != new_segments.rend(); ++it) {
    DARUMA_RETURN_IF_ERROR(
        (*it)->ChangeFileSuffixes(std::string(kCleanedFileSuffix), std::string(kSwapFileSuffix)));
  }
  std::vector<LogSegment*> swapped;
  for (auto it = new_segments.rbegin(); it != new_segments.rend(); ++it) {
    const int64_t base = (*it)->base_offset();
    auto existing = segments_.find(base);
    if (existing != segments_.end()) old.push_back(std::move(existing->second));
    swapped.push_back(it->get());
    segments_[base] = std::move(*it);
  }
  // Step 3: the replaced segments leave the map; their files become `.deleted`.
  for (int64_t base : old_bases) {
    auto existing = segments_.find(base);
    if (existing != segments_.end() &&
        std::find(swapped.begin(), swapped.end(), existing->second.get()) == swapped.end()) {
      old.push_back(std::move(existing->second));
      segments_.erase(existing);
    }
  }
  std::sort(old.begin(), old.end(),
            [](const auto& a, const auto& b) { return a->base_offset() < b->base_offset(); });
  for (auto& segment : old) {
    DARUMA_RETURN_IF_ERROR(segment->ChangeFileSuffixes("", std::string(kDeletedFileSuffix)));
  }
  // Step 4: `.swap` -> final names, then make the renames durable.
  for (auto it = swapped.rbegin(); it != swapped.rend(); ++it) {
    DARUMA_RETURN_IF_ERROR((*it)->ChangeFileSuffixes(std::string(kSwapFileSuffix), ""));
  }
  DARUMA_RETURN_IF_ERROR(fs_->SyncDir(dir_));
  RetentionResult removed;
  for (auto& segment : old) {
    if (!segments_.count(segment->base_offset())) {  // not replaced at the same base
      DARUMA_ASSIGN_OR_RETURN(
          auto snapshot, producer_state_->RemoveAndMarkSnapshotForDeletion(segment->base_offset()));
      if (snapshot) removed.deleted_snapshots.push_back(*snapshot);
    }
    removed.segments.push_back(std::move(segment));
  }
  return removed;
}
// ---- end of log cleaner support --------------------------------------------

}  // namespace daruma
