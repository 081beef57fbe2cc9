// LogSegment: one segment of a partition log — the `.log` file plus its
// `.index`, `.timeindex` and (lazily created) `.txnindex` (spec §6, §7).
//
// Invariants:
//  * Every batch in the segment has base offset >= base_offset() and
//    last offset - base_offset() <= INT32_MAX (the relative-offset rule).
//  * size() is the logical size: the bytes appended (the physical file may be
//    longer when preallocated; it is trimmed on roll/close).
//  * Index entries follow Kafka's rule (§7.6): an append that starts when more
//    than index.interval.bytes were written since the last entry gets an
//    offset-index entry (its largest offset, its start position) and a
//    time-index entry (max timestamp so far, its shallow offset).
//
// Durability: Append() only writes to the page cache ("appended"); data is
// durable after Flush() ("flushed and fsynced"), which syncs the log and the
// indexes.
//
// Preallocated segments (Kafka's `preallocate`): the .log is created at
// segment.bytes, as Kafka does, and appends store into a writable mapping of
// the next 8 MiB (MappedAppendWindow, blocks reserved first)
// instead of one write() per batch: the same page-cache bytes, without the
// kernel's per-call cost that bounds a 1 KiB write() near 0.7 GB/s. The file is
// trimmed to size() on roll and close; after a crash its tail is zeros, which
// recovery truncates as Kafka does.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "common/clock.h"
#include "common/damage_kind.h"
#include "common/file_system.h"
#include "common/mapped_append_window.h"
#include "common/status.h"
#include "log/log_config.h"
#include "log/offset_index.h"
#include "log/segment_recovery_scan.h"
#include "log/segment_scan_split.h"
#include "log/time_index.h"
#include "log/transaction_index.h"
#include "record/file_batch_reader.h"

namespace daruma {

// A position found by TranslateOffset: the first batch with lastOffset >= the
// requested offset.
struct LogOffsetPosition {
  int64_t offset = 0;    // that batch's last offset (as Kafka's searchForOffset)
  int32_t position = 0;  // byte position in the .log
  int32_t size = 0;      // batch size in bytes
};

// What segment recovery (spec §10.4) found and did.
struct SegmentRecoveryResult {
  int64_t valid_bytes = 0;
  int64_t truncated_bytes = 0;
  int64_t batches = 0;
  int64_t next_offset = 0;  // last offset of the last valid batch + 1, or base offset
  // Why the scan stopped early, with file/position/field; empty if it reached the end.
  std::string stop_reason;
  std::optional<DamageKind> stop_kind;  // what stop_reason describes
  StopReason reader_stop = StopReason::kEndOfFile;
  // Corruption found in a batch (CRC/size), as opposed to a torn tail.
  bool corrupt_batch = false;
};

// Kafka's LogConfig.randomSegmentJitter: uniform in [0, min(segment.jitter.ms,
// segment.ms)), or 0 when jitter is off. Drawn per segment so that partitions
// created together do not all roll (and then get deleted) at the same moment.
int64_t RandomSegmentJitterMs(const LogConfig& config);

class LogSegment {
 public:
  // Opens (file_already_exists) or creates the segment `base` in `dir`.
  // A new segment's .log is created empty, or preallocated to
  // config.InitFileSize() when config.preallocate. `clock` (the system clock
  // when null) dates the segment's creation for time-based rolling of
  // segments without timestamps.
  static Result<std::unique_ptr<LogSegment>> Open(FileSystem* fs, const std::string& dir,
                                                  int64_t base_offset, const LogConfig& config,
                                                  bool file_already_exists,
                                                  const std::string& file_suffix = "",
                                                  Clock* clock = nullptr);
  ~LogSegment();

  int64_t base_offset() const { return base_offset_; }
  int64_t size() const { return size_; }
  const std::string& dir() const { return dir_; }
  const std::string& log_path() const { return log_file_->path(); }
  std::string offset_index_path() const;
  std::string time_index_path() const;
  std::string txn_index_path() const;
  File* log_file() const { return log_file_.get(); }

  // Indexes are opened on first use (Kafka opens them lazily too). After
  // VerifyIndexesOnFirstLoad, the first use also checks them (below).
  Result<OffsetIndex*> offset_index();
  Result<TimeIndex*> time_index();
  TransactionIndex* txn_index() { return txn_index_.get(); }

  // Appends `records` (one or more whole batches) whose largest offset and
  // timestamp are given. Fails with kOffsetOverflow if largest_offset cannot
  // be expressed relative to base_offset().
  Status Append(int64_t largest_offset, int64_t largest_timestamp,
                int64_t shallow_offset_of_max_timestamp, ByteSpan records);

  // Records an aborted transaction whose ABORT marker is in this segment.
  Status UpdateTxnIndex(const AbortedTxn& txn);
  // The same from ApplyRecovery's on_batch: the entry is written with the
  // segment's others when the replay ends (TransactionIndex::AppendBuffered).
  Status BufferTxnIndexUpdate(const AbortedTxn& txn);

  // The first batch whose last offset >= offset, scanning from
  // starting_position; nullopt if none.
  Result<std::optional<LogOffsetPosition>> TranslateOffset(int64_t offset,
                                                           int32_t starting_position = 0);

  // Reads whole batches starting at the batch containing start_offset, at most
  // max_size bytes (always at least one whole batch if min_one_message), not
  // beyond max_position. Returns the bytes and the start position.
  struct ReadResult {
    int32_t position = 0;
    Bytes bytes;
  };
  Result<std::optional<ReadResult>> Read(int64_t start_offset, int32_t max_size,
                                         int64_t max_position, bool min_one_message);
  // The same into `out` (resized to the bytes returned, its capacity reused:
  // a caller fetching in a loop neither allocates nor zero-fills per fetch).
  // Returns the start position, or nullopt if no batch qualifies (then `out`
  // is left empty).
  Result<std::optional<int32_t>> ReadInto(int64_t start_offset, int32_t max_size,
                                          int64_t max_position, bool min_one_message, Bytes* out);

  // Segment recovery (spec §10.4): resets the indexes, scans every batch,
  // validates it, rebuilds indexes with index.interval.bytes, calls on_batch
  // for each valid batch (producer state, leader epochs; an error from it
  // aborts recovery with that error), and truncates the file after the last
  // valid batch. Offset-overflow and non-monotonic index errors are returned.
  // before_truncate(valid_bytes, size), if set, runs just before bytes
  // [valid_bytes, size) are cut off (so a caller can set them aside first); an
  // error from it aborts recovery with the file untouched.
  //
  // on_batch sees only the batches recovery state depends on (v2 batches with
  // a producer id or a leader epoch above every earlier one of the segment;
  // see segment_recovery_scan.h), and for a data batch only its 61-byte
  // header. Recover() = ApplyRecovery(ScanForRecovery()).
  using BatchVisitor = std::function<Status(const LogEntry&)>;
  using TruncateHook = std::function<Status(int64_t valid_bytes, int64_t size)>;
  Result<SegmentRecoveryResult> Recover(const BatchVisitor& on_batch,
                                        const TruncateHook& before_truncate = nullptr);
  // The read-only half: may run on another thread while the segment is not
  // modified.
  // `next_segment_base`: the base offset of the segment after this one, if
  // any; no batch of this one may reach it (segment_recovery_scan.h).
  SegmentRecoveryScan ScanForRecovery(
      std::optional<int64_t> next_segment_base = std::nullopt) const;
  // The same scan in two parts for two threads (segment_scan_split.h).
  std::unique_ptr<SplitSegmentScan> SplitScanForRecovery(
      std::optional<int64_t> next_segment_base = std::nullopt) const;
  // The writing half, replaying `scan` (which must be of this segment at its
  // current size) in batch order. `resize_indexes_to` > 0: the caller makes
  // this the active segment with indexes of that size right after (Kafka's
  // resizeIndexes at the end of a load), so the indexes are left as the trim
  // followed by that resize would leave them (IndexFile::TrimThenResize).
  Result<SegmentRecoveryResult> ApplyRecovery(const SegmentRecoveryScan& scan,
                                              const BatchVisitor& on_batch,
                                              const TruncateHook& before_truncate = nullptr,
                                              int32_t resize_indexes_to = 0);

  // Recovery only, before the indexes are rebuilt: cuts the .log at
  // `position` (an entry boundary; the bytes after it are damage the caller
  // has set aside) and empties both indexes, so nothing points past the new
  // end. Returns the bytes removed.
  Result<int64_t> TruncateDamagedTail(int64_t position);

  // Truncates to the first batch with last offset >= offset (if any); returns
  // the number of bytes removed. Indexes follow.
  Result<int64_t> TruncateTo(int64_t offset);

  // The offset after the last batch, scanning from the last offset-index entry.
  Result<int64_t> ReadNextOffset();

  // Roll/close hook: final time-index entry, trim indexes, trim a
  // preallocated log file to its logical size.
  Status OnBecomeInactiveSegment();

  Status Flush();
  // Creates the indexes that are deferred files (IndexFile) too, syncing each
  // but not the dir: the caller syncs it when has_deferred_index_files().
  Status Close();
  bool has_deferred_index_files() const;
  // Creates the files of deferred indexes now, unsynced (the time index
  // first, as Flush and Close do).
  Status CreateDeferredIndexFiles();
  // Renames all files from suffix old_suffix to new_suffix (e.g. "" -> ".deleted").
  Status ChangeFileSuffixes(const std::string& old_suffix, const std::string& new_suffix);
  // Removes the segment's files (after Close).
  Status DeleteFiles();

  // Largest timestamp of the segment as seen so far (the time index's last
  // entry after load); -1 if none.
  Result<int64_t> MaxTimestampSoFar();
  // Kafka's largestTimestamp: max timestamp if >= 0, else the .log mtime.
  Result<int64_t> LargestTimestamp();
  // Roll decision (spec: LogSegment.shouldRoll).
  struct RollParams {
    int64_t max_segment_ms;
    int32_t max_segment_bytes;
    int64_t max_timestamp_in_messages;
    int64_t max_offset_in_messages;
    int32_t messages_size;
    int64_t now;
  };
  Result<bool> ShouldRoll(const RollParams& params);
  bool CanConvertToRelativeOffset(int64_t offset) const;
  // Resizes both indexes (after load, the active segment gets its max size
  // back). Their files are extended only by the first append that maps them
  // (IndexFile::Resize with extend_file false): Kafka preallocates them here,
  // then trims them at close, two size changes per index, each a journal
  // update on ext4, for a partition nothing was appended to. Kafka's loader
  // takes the shorter file a crash may then leave as any trimmed index.
  Status ResizeIndexes(int32_t size);
  Status SanityCheckTxnIndex() const;
  // OffsetIndex::CheckEntries against this segment's size, then
  // TimeIndex::CheckEntries (loads the indexes).
  Status CheckIndexEntries();
  // Lazy verification, Daruma's guarantee beyond Kafka (which trusts the
  // indexes of a clean start without reading them, spec §7.5) at no start-up
  // cost: from now on, the first offset_index()/time_index() call that finds
  // an index not yet checked runs CheckIndexEntries' check on it; a corrupt
  // index makes RebuildIndexes() rebuild both, and on_rebuild(warning) is
  // called with a message naming the .log and the corruption. An error other
  // than corruption is returned by that call.
  using IndexWarningSink = std::function<void(const std::string& warning)>;
  void VerifyIndexesOnFirstLoad(IndexWarningSink on_rebuild);
  // Rebuilds .index and .timeindex from the .log by a read-only scan of its
  // batches (the .log is neither truncated nor written): an entry every
  // index.interval.bytes as in recovery (§7.6), up to the first invalid batch,
  // and the final time-index entry; both files end trimmed (§7.1).
  Status RebuildIndexes();
  // The warning of the last lazy rebuild, empty if none happened.
  const std::string& index_rebuild_warning() const { return index_rebuild_warning_; }
  bool offset_index_exists() const;
  int64_t created_ms() const { return created_ms_; }
  // This segment's share of segment.jitter.ms, drawn when it was opened.
  int64_t roll_jitter_ms() const { return roll_jitter_ms_; }

 private:
  // offset_index() and time_index(), opening a missing index with
  // defer_new_file (IndexFile::Options): ApplyRecovery's, for a segment it
  // trims.
  Result<OffsetIndex*> offset_index(bool defer_new_file);
  Result<TimeIndex*> time_index(bool defer_new_file);

  LogSegment(FileSystem* fs, std::string dir, int64_t base_offset, LogConfig config,
             std::string suffix, Clock* clock)
      : clock_(clock),
        fs_(fs),
        dir_(std::move(dir)),
        base_offset_(base_offset),
        config_(config),
        suffix_(std::move(suffix)) {}
  Status LoadMaxTimestampFromTimeIndex();
  // Empties both (open) indexes before ApplyRecovery appends up to `appends`
  // entries to each: as Kafka's reset, without file size changes when the
  // files have room (log_segment.cc).
  Status ClearIndexesForRebuild(size_t appends);
  // The lazy check of VerifyIndexesOnFirstLoad, once per index.
  Status VerifyIndexIfPending(bool offset_index);
  // Corruption unless the offset index's last entry points at the start of a
  // whole batch whose offsets lie after the previous entry's and that ends
  // at its offset (Kafka >= 2.0) or holds it (a pre-2.0 first-offset key):
  // ReadNextOffset scans from there, so a plausible but wrong last entry
  // would silently lower the log end offset.
  Status CheckLastOffsetIndexEntryTarget();
  // The first offset of the entry at `position` as far as its header tells:
  // a v2 batch's base offset (at least `floor`), else `floor`.
  Result<int64_t> FirstOffsetOfEntryAt(int64_t position, int64_t floor) const;
  // Calls visit(entry) for each whole entry in [from, end) (headers only are
  // read; stops early at a corrupt or torn entry, or when visit returns true).
  template <typename Visit>
  Status ScanEntryHeaders(int64_t from, int64_t end, Visit&& visit) const;
  // The end of the last whole entry starting at or after `from` that ends at
  // or before `limit` (`from` if none fits); from must be an entry boundary.
  Result<int64_t> WholeEntriesEnd(int64_t from, int64_t limit);

  // Stores records at `position` of the .log: through the append window when
  // the segment is preallocated and the file can be mapped, else WriteAt.
  Status WriteRecords(int64_t position, ByteSpan records);
  // Drops the append window; every shrink of the .log calls it first (a
  // store into a page past the end of the file is SIGBUS).
  void ReleaseAppendWindow() { append_window_.Release(); }
  // Cuts the .log at `position` (< size_); the indexes are the caller's.
  Status CutLogAt(int64_t position);

  Clock* clock_;
  FileSystem* fs_;
  std::string dir_;
  int64_t base_offset_;
  LogConfig config_;
  std::string suffix_;
  std::unique_ptr<File> log_file_;
  // Preallocated segments only. 8 MiB: one reserve + map per 8,192 appends of
  // 1 KiB, and few enough mapped bytes per partition that 10,000 active
  // segments stay cheap. Declared after log_file_ so it is released first.
  MappedAppendWindow append_window_{uint64_t(8) << 20};
  // The file may be longer than size_: preallocated at creation, or blocks
  // reserved ahead by the append window. Otherwise its length is size_ (set
  // from it at open, moved by every write and truncation), and Close needs
  // no stat to know there is nothing to trim (40,000 stats when 10,000
  // partitions shut down).
  bool file_may_exceed_size_ = false;
  std::unique_ptr<OffsetIndex> offset_index_;
  std::unique_ptr<TimeIndex> time_index_;
  std::unique_ptr<TransactionIndex> txn_index_;
  int64_t size_ = 0;
  // True until Flush() has synced the .log since its last change. Starts true:
  // an existing file may hold bytes a crash left unsynced. Close() syncs only
  // when it is set, so a shutdown right after a flush does not sync twice.
  bool log_unsynced_ = true;
  int64_t bytes_since_last_index_entry_ = 0;
  // Max timestamp seen so far and the shallow offset of the batch carrying it.
  std::optional<int64_t> max_timestamp_so_far_;
  int64_t shallow_offset_of_max_timestamp_ = 0;
  std::optional<int64_t> rolling_based_timestamp_;
  int64_t created_ms_ = 0;
  int64_t roll_jitter_ms_ = 0;
  // Indexes VerifyIndexesOnFirstLoad asked to check and not yet checked.
  bool verify_offset_index_ = false;
  bool verify_time_index_ = false;
  IndexWarningSink on_index_rebuild_;
  std::string index_rebuild_warning_;
};

}  // namespace daruma
