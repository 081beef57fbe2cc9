#include "log/cleaner.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "log/log_file_names.h"
#include "record/file_batch_reader.h"
#include "record/legacy_message.h"
#include "record/record_batch_builder.h"

namespace daruma {

struct Cleaner::Round {
  Log* log = nullptr;
  const Log::CleanerView* view = nullptr;
  CompactionConfig config;
  int64_t now = 0;
  int64_t upper_bound = 0;  // first_uncleanable_offset of the round
  std::map<int64_t, Log::ProducerLastRecord> last_records;
  CleanedTransactionMetadata txns;
  CleanStats* stats = nullptr;
  const DisposeSegment* dispose = nullptr;
  // Kafka's legacyDeleteHorizonMs: mtime of the last segment below the first
  // dirty offset minus delete.retention.ms (0 without such a segment).
  int64_t legacy_delete_horizon_ms = 0;
};

namespace {

// Throttle in steps of this many bytes, not per batch (the throttler locks).
constexpr int64_t kThrottleStepBytes = 64 * 1024;

// The 61-byte header Kafka writes for a batch kept only for its producer
// metadata (DefaultRecordBatch.writeEmptyHeader, spec §2.4): no records,
// codec none, base timestamp -1, the original max timestamp.
Bytes EmptyBatchHeader(const RecordBatchView& batch) {
  namespace L = batch_layout;
  Bytes out(kRecordBatchOverhead);
  uint8_t* p = out.data();
  StoreBe64(p + L::kBaseOffset, uint64_t(batch.base_offset()));
  StoreBe32(p + L::kLength, uint32_t(kRecordBatchOverhead - kLogOverhead));
  StoreBe32(p + L::kPartitionLeaderEpoch, uint32_t(batch.partition_leader_epoch()));
  p[L::kMagic] = kMagicV2;
  const uint8_t keep = batch_attributes::kLogAppendTime | batch_attributes::kTransactional |
                       batch_attributes::kControl;
  StoreBe16(p + L::kAttributes, uint16_t(batch.attribute_byte() & keep));
  StoreBe32(p + L::kLastOffsetDelta, uint32_t(batch.last_offset_delta()));
  StoreBe64(p + L::kBaseTimestamp, uint64_t(kNoTimestamp));
  StoreBe64(p + L::kMaxTimestamp, uint64_t(batch.max_timestamp()));
  StoreBe64(p + L::kProducerId, uint64_t(batch.producer_id()));
  StoreBe16(p + L::kProducerEpoch, uint16_t(batch.producer_epoch()));
  StoreBe32(p + L::kBaseSequence, uint32_t(batch.base_sequence()));
  StoreBe32(p + L::kRecordsCount, 0);
  RewriteBatchCrc(out);
  return out;
}

// Re-encodes the retained records of `batch` as Kafka's
// buildRetainedRecordsInto: same codec, offsets, producer fields and flags;
// LastOffsetDelta kept even when the last record is gone.
Result<Bytes> RebuildBatch(const RecordBatchView& batch, const std::vector<Record>& retained,
                           std::optional<int64_t> delete_horizon) {
  BatchBuilderOptions o;
  o.base_offset = batch.base_offset();
  o.partition_leader_epoch = batch.partition_leader_epoch();
  o.compression = batch.compression();
  o.timestamp_type = batch.timestamp_type();
  o.producer_id = batch.producer_id();
  o.producer_epoch = batch.producer_epoch();
  o.base_sequence = batch.base_sequence();
  o.is_transactional = batch.is_transactional();
  o.is_control = batch.is_control();
  if (batch.timestamp_type() == TimestampType::kLogAppendTime) {
    o.log_append_time = batch.max_timestamp();
  }
  o.delete_horizon_ms = delete_horizon;
  std::vector<RecordInput> inputs;
  inputs.reserve(retained.size());
  for (const Record& r : retained) {
    RecordInput in;
    in.timestamp = r.timestamp;
    in.key = r.key;
    in.value = r.value;
    in.headers = r.headers;
    in.offset_delta = int32_t(r.offset - batch.base_offset());
    inputs.push_back(std::move(in));
  }
  DARUMA_ASSIGN_OR_RETURN(Bytes out, BuildRecordBatch(o, inputs));
  StoreBe32(out.data() + batch_layout::kLastOffsetDelta, uint32_t(batch.last_offset_delta()));
  RewriteBatchCrc(out);
  return out;
}

// The records of a legacy (v0/v1) entry with absolute offsets: itself when
// uncompressed, else the wrapper's inner messages (spec §3.2).
Result<std::vector<Record>> LegacyRecords(const LogEntry& entry, size_t max_decompressed) {
  DARUMA_ASSIGN_OR_RETURN(LegacyMessageView view, LegacyMessageView::Parse(entry.bytes));
  return view.DecodeRecords(max_decompressed);
}

// Kafka's shouldRetainRecord for a legacy record: tombstones follow the
// segment-mtime rule (`retain_deletes`), there is no delete horizon.
bool RetainLegacyRecord(const SkimpyOffsetMap& map, const Record& r, bool retain_deletes) {
  if (r.offset > map.latest_offset()) return true;
  if (!r.key) return false;
  return r.offset >= map.Get(AsBytes(*r.key)) && (r.value.has_value() || retain_deletes);
}

struct LegacyVerdict {
  bool keep = true;
  int64_t records = 0;
};

// A legacy entry is kept whole (byte for byte) or dropped whole:
//  * every record retained: copied as it is;
//  * no record retained: dropped (an uncompressed entry is one record, so
//    this is all an uncompressed entry can lose), except the entry ending at
//    the round's upper bound, which Kafka keeps (RETAIN_EMPTY; a legacy entry
//    cannot be emptied) and is copied;
//  * a compressed wrapper keeping some of its inner records: copied whole.
//    Kafka re-compresses the retained records into a new wrapper; Daruma does
//    not re-encode legacy wrappers, so superseded inner records stay until
//    the wrapper is superseded entirely. Nothing retained is ever lost.
Result<LegacyVerdict> JudgeLegacyEntry(const SkimpyOffsetMap& map, const LogEntry& entry,
                                       bool retain_deletes, int64_t upper_bound,
                                       size_t max_decompressed) {
  DARUMA_ASSIGN_OR_RETURN(auto records, LegacyRecords(entry, max_decompressed));
  size_t kept = 0;
  for (const Record& r : records) kept += RetainLegacyRecord(map, r, retain_deletes);
  const bool at_upper_bound = entry.last_offset() + 1 == upper_bound;
  return LegacyVerdict{kept > 0 || records.empty() || at_upper_bound, int64_t(records.size())};
}

Status AppendBatch(LogSegment* dest, ByteSpan bytes) {
  const RecordBatchView view(bytes);
  return dest->Append(view.last_offset(), view.max_timestamp(), view.last_offset(), bytes);
}

// Removes leftovers of an earlier attempt at `base` (Kafka's createNewCleanedSegment).
Status DeleteCleanedFiles(FileSystem* fs, const std::string& dir, int64_t base) {
  for (const std::string& path : {LogFileName(dir, base, kCleanedFileSuffix),
                                  OffsetIndexFileName(dir, base, kCleanedFileSuffix),
                                  TimeIndexFileName(dir, base, kCleanedFileSuffix),
                                  TxnIndexFileName(dir, base, kCleanedFileSuffix)}) {
    if (fs->Exists(path)) DARUMA_RETURN_IF_ERROR(fs->Remove(path));
  }
  return Status::Ok();
}

}  // namespace

Cleaner::Cleaner(FileSystem* fs, const CleanerConfig& config, Throttler* throttler)
    : fs_(fs), config_(config), throttler_(throttler), map_(config.OffsetMapBytesPerThread()) {}

Status Cleaner::Throttle(int64_t bytes) {
  if (throttler_ != nullptr) {
    unthrottled_bytes_ += bytes;
    if (unthrottled_bytes_ >= kThrottleStepBytes) {
      throttler_->MaybeThrottle(double(unthrottled_bytes_), abort_);
      unthrottled_bytes_ = 0;
    }
  }
  // Once per batch: Kafka's checkDone, which lets a partition's deletion or
  // a shutdown end a long clean at once instead of waiting it out.
  if (abort_ != nullptr && abort_->load(std::memory_order_relaxed)) {
    return Status::Aborted(fmt::format("cleaning of {} aborted", log_name_));
  }
  return Status::Ok();
}

Result<CleanStats> Cleaner::Clean(Log* log, const Log::CleanerView& view,
                                  const LogToClean& to_clean, const CompactionConfig& config,
                                  int64_t now_ms, const DisposeSegment& dispose,
                                  const std::atomic<bool>* abort) {
  abort_ = abort;
  log_name_ = log->topic_partition().ToString();
  CleanStats stats;
  stats.first_dirty_offset = to_clean.first_dirty_offset;
  stats.end_offset = to_clean.first_dirty_offset;
  if (to_clean.first_uncleanable_offset <= to_clean.first_dirty_offset) return stats;
  DARUMA_RETURN_IF_ERROR(BuildOffsetMap(log, view, to_clean.first_dirty_offset,
                                        to_clean.first_uncleanable_offset, &stats));
  stats.end_offset = std::max(map_.latest_offset() + 1, to_clean.first_dirty_offset);
  if (stats.end_offset <= to_clean.first_dirty_offset) return stats;

  Round round;
  round.log = log;
  round.view = &view;
  round.config = config;
  round.now = now_ms;
  round.upper_bound = to_clean.first_uncleanable_offset;
  round.last_records = log->LastRecordsOfActiveProducers();
  round.stats = &stats;
  round.dispose = &dispose;
  for (const auto& seg : view.segments) {
    if (seg.base_offset >= to_clean.first_dirty_offset) break;
    round.legacy_delete_horizon_ms = seg.last_modified_ms - config.delete_retention_ms;
  }

  // Kafka's logSegments(0, endOffset): the inactive segments with base < end
  // offset, a prefix of view.segments (so group indexes are view indexes).
  std::vector<Log::CleanerSegmentView> to_rewrite;
  for (size_t i = 0; i + 1 < view.segments.size(); ++i) {
    if (view.segments[i].base_offset >= stats.end_offset) break;
    to_rewrite.push_back(view.segments[i]);
  }
  const LogConfig lc = log->config_snapshot();  // UpdateConfig may run concurrently
  for (const auto& group : GroupSegmentsBySize(to_rewrite, lc.segment_bytes, lc.segment_index_bytes,
                                               to_clean.first_uncleanable_offset)) {
    DARUMA_RETURN_IF_ERROR(CleanGroup(&round, group));
    stats.groups++;
  }
  stats.cleaned = true;
  return stats;
}

Status Cleaner::BuildOffsetMap(Log* log, const Log::CleanerView& view, int64_t start, int64_t end,
                               CleanStats* stats) {
  map_.Clear();
  CleanedTransactionMetadata txns;
  DARUMA_ASSIGN_OR_RETURN(auto aborted, log->CollectAbortedTransactions(start, end));
  txns.AddAbortedTransactions(aborted);
  const auto& segs = view.segments;
  for (size_t i = 0; i < segs.size(); ++i) {
    const bool holds_or_after_start = i + 1 == segs.size() || segs[i + 1].base_offset > start;
    if (!holds_or_after_start) continue;
    if (segs[i].base_offset >= end) break;
    DARUMA_ASSIGN_OR_RETURN(bool full, BuildOffsetMapForSegment(segs[i], start, end, &txns, stats));
    if (full) break;
  }
  return Status::Ok();
}

Result<bool> Cleaner::BuildOffsetMapForSegment(const Log::CleanerSegmentView& seg, int64_t start,
                                               int64_t end, CleanedTransactionMetadata* txns,
                                               CleanStats* stats) {
  const int64_t max_desired = map_.MaxDesiredSize(config_.io_buffer_load_factor);
  int32_t start_position = 0;
  if (start > seg.base_offset) {
    DARUMA_ASSIGN_OR_RETURN(auto pos, seg.segment->TranslateOffset(start));
    if (!pos) return false;
    start_position = pos->position;
  }
  FileBatchReaderOptions ro;
  ro.start_position = uint64_t(start_position);
  ro.end_position = uint64_t(seg.size);
  ro.block_size = size_t(std::max<int64_t>(config_.io_buffer_size / 2, 64 * 1024));
  FileBatchReader reader(seg.segment->log_file(), ro);
  while (auto entry = reader.Next()) {
    DARUMA_RETURN_IF_ERROR(entry->Validate());
    if (entry->prefix_offset() >= end) break;
    stats->map_bytes_read += int64_t(entry->size());
    DARUMA_RETURN_IF_ERROR(Throttle(int64_t(entry->size())));
    if (!entry->is_v2()) {
      // Legacy entries are mapped like a v2 batch's records (no transactions).
      DARUMA_ASSIGN_OR_RETURN(
          auto records, LegacyRecords(*entry, MaxDecompressedBytesFor(config_.max_message_bytes)));
      for (const Record& r : records) {
        if (r.key && r.offset >= start) {
          if (map_.size() >= max_desired) return true;
          map_.Put(AsBytes(*r.key), r.offset);
        }
        stats->map_messages_read++;
      }
      if (entry->last_offset() >= start) map_.UpdateLatestOffset(entry->last_offset());
      continue;
    }
    const RecordBatchView batch = entry->batch();
    if (batch.is_control()) {
      DARUMA_RETURN_IF_ERROR(txns->OnControlBatchRead(batch).status());
      stats->map_messages_read++;
    } else if (txns->OnBatchRead(batch)) {
      stats->map_messages_read += batch.records_count();
    } else {
      DARUMA_ASSIGN_OR_RETURN(
          auto records, batch.DecodeRecords(MaxDecompressedBytesFor(config_.max_message_bytes)));
      for (const Record& r : records) {
        if (r.key && r.offset >= start) {
          if (map_.size() >= max_desired) return true;
          map_.Put(AsBytes(*r.key), r.offset);
        }
        stats->map_messages_read++;
      }
    }
    if (batch.last_offset() >= start) map_.UpdateLatestOffset(batch.last_offset());
  }
  DARUMA_RETURN_IF_ERROR(reader.ScanStatus());
  return false;
}

Status Cleaner::CleanGroup(Round* round, const std::vector<size_t>& group) {
  const auto& segs = round->view->segments;
  const int64_t base = segs[group.front()].base_offset;
  Log* log = round->log;
  DARUMA_RETURN_IF_ERROR(DeleteCleanedFiles(fs_, log->dir(), base));
  DARUMA_ASSIGN_OR_RETURN(auto cleaned,
                          LogSegment::Open(fs_, log->dir(), base, log->config_snapshot(), false,
                                           std::string(kCleanedFileSuffix)));
  round->txns.set_cleaned_index(cleaned->txn_index());
  auto fail = [&](Status st) {
    round->txns.set_cleaned_index(nullptr);
    (void)cleaned->Close();
    (void)cleaned->DeleteFiles();
    return st;
  };
  for (size_t k = 0; k < group.size(); ++k) {
    const auto& source = segs[group[k]];
    const int64_t upper = segs[group[k] + 1].base_offset;  // never the active segment
    auto aborted = log->CollectAbortedTransactions(source.base_offset, upper);
    if (!aborted.ok()) return fail(aborted.status());
    round->txns.AddAbortedTransactions(*aborted);
    Status st = CleanInto(round, source, cleaned.get());
    if (!st.ok()) return fail(st);
  }
  round->txns.set_cleaned_index(nullptr);
  Status st = cleaned->OnBecomeInactiveSegment();
  if (st.ok()) st = cleaned->Flush();
  const int64_t mtime = segs[group.back()].last_modified_ms;
  for (const std::string& path :
       {cleaned->log_path(), cleaned->offset_index_path(), cleaned->time_index_path()}) {
    if (st.ok()) st = fs_->SetModifiedTimeMs(path, mtime);
  }
  if (!st.ok()) return fail(st);
  std::vector<int64_t> old_bases;
  for (size_t i : group) old_bases.push_back(segs[i].base_offset);
  std::vector<std::unique_ptr<LogSegment>> fresh;
  fresh.push_back(std::move(cleaned));
  DARUMA_ASSIGN_OR_RETURN(auto replaced, log->ReplaceSegments(std::move(fresh), old_bases));
  round->stats->segments_replaced += int64_t(replaced.segments.size());
  (*round->dispose)(log, std::move(replaced));
  return Status::Ok();
}

Status Cleaner::CleanInto(Round* round, const Log::CleanerSegmentView& source, LogSegment* dest) {
  FileBatchReaderOptions ro;
  ro.end_position = uint64_t(source.size);
  ro.block_size = size_t(std::max<int64_t>(config_.io_buffer_size / 2, 64 * 1024));
  FileBatchReader reader(source.segment->log_file(), ro);
  while (auto entry = reader.Next()) {
    DARUMA_RETURN_IF_ERROR(entry->Validate());
    round->stats->bytes_read += int64_t(entry->size());
    round->stats->batches_read++;
    DARUMA_RETURN_IF_ERROR(Throttle(int64_t(entry->size())));
    if (!entry->is_v2()) {
      // Kafka: tombstones of legacy records stay while their segment is newer
      // than the legacy delete horizon.
      const bool retain_deletes = source.last_modified_ms > round->legacy_delete_horizon_ms;
      DARUMA_ASSIGN_OR_RETURN(LegacyVerdict verdict,
                              JudgeLegacyEntry(map_, *entry, retain_deletes, round->upper_bound,
                                               MaxDecompressedBytesFor(config_.max_message_bytes)));
      round->stats->messages_read += verdict.records;
      if (!verdict.keep) continue;
      DARUMA_RETURN_IF_ERROR(dest->Append(entry->last_offset(), entry->max_timestamp(),
                                          entry->last_offset(), entry->bytes));
      round->stats->bytes_written += int64_t(entry->size());
      round->stats->batches_written++;
      round->stats->messages_written += verdict.records;
      continue;
    }
    DARUMA_RETURN_IF_ERROR(FilterBatch(round, entry->batch(), dest));
  }
  return reader.ScanStatus();
}

Status Cleaner::FilterBatch(Round* round, const RecordBatchView& batch, LogSegment* dest) {
  const int64_t now = round->now;
  bool can_discard = false;
  if (batch.is_control()) {
    DARUMA_ASSIGN_OR_RETURN(can_discard, round->txns.OnControlBatchRead(batch));
  } else {
    can_discard = round->txns.OnBatchRead(batch);
  }
  const auto horizon = batch.delete_horizon_ms();
  const bool discard_records =
      batch.is_control() ? can_discard && horizon && *horizon <= now : can_discard;
  bool last_of_producer = false;
  if (batch.has_producer_id()) {
    auto it = round->last_records.find(batch.producer_id());
    if (it != round->last_records.end()) {
      last_of_producer =
          it->second.last_data_offset
              ? batch.last_offset() == *it->second.last_data_offset
              : batch.is_control() && batch.producer_epoch() == it->second.producer_epoch;
    }
  }
  const bool retain_empty = last_of_producer || batch.next_offset() == round->upper_bound;
  if (!retain_empty && discard_records) return Status::Ok();  // BatchRetention.DELETE
  const bool marker_for_empty_txn = can_discard && batch.is_control();

  DARUMA_ASSIGN_OR_RETURN(auto records,
                          batch.DecodeRecords(MaxDecompressedBytesFor(config_.max_message_bytes)));
  round->stats->messages_read += int64_t(records.size());
  std::vector<Record> retained;
  bool write_original = true;
  bool contains_tombstones = false;
  for (Record& r : records) {
    const bool keep = !discard_records && (batch.is_control() || ShouldRetainRecord(batch, r, now));
    if (!keep) {
      write_original = false;
      continue;
    }
    if (!r.value) contains_tombstones = true;
    retained.push_back(std::move(r));
  }
  Bytes rebuilt;
  ByteSpan out;
  if (!retained.empty()) {
    const bool set_horizon = (contains_tombstones || marker_for_empty_txn) && !horizon;
    if (write_original && !set_horizon) {
      out = batch.bytes();
    } else {
      const std::optional<int64_t> new_horizon =
          set_horizon ? std::optional<int64_t>(now + round->config.delete_retention_ms) : horizon;
      DARUMA_ASSIGN_OR_RETURN(rebuilt, RebuildBatch(batch, retained, new_horizon));
      out = rebuilt;
    }
  } else if (retain_empty) {
    rebuilt = EmptyBatchHeader(batch);
    out = rebuilt;
  } else {
    return Status::Ok();  // BatchRetention.DELETE_EMPTY with nothing left
  }
  DARUMA_RETURN_IF_ERROR(AppendBatch(dest, out));
  round->stats->bytes_written += int64_t(out.size());
  round->stats->batches_written++;
  round->stats->messages_written += int64_t(retained.size());
  return Throttle(int64_t(out.size()));
}

bool Cleaner::ShouldRetainRecord(const RecordBatchView& batch, const Record& record,
                                 int64_t now) const {
  if (record.offset > map_.latest_offset()) return true;
  if (!record.key) return false;
  const int64_t found = map_.Get(AsBytes(*record.key));
  const auto horizon = batch.delete_horizon_ms();
  const bool retain_deletes = !horizon || now < *horizon;
  return record.offset >= found && (record.value.has_value() || retain_deletes);
}

}  // namespace daruma
