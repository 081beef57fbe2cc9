// Log: one partition's log (Kafka's UnifiedLog + LocalLog): ordered segments,
// the active segment, offsets (log start, log end, high watermark, recovery
// point, last stable offset), producer state and the leader-epoch cache.
//
// Offsets and their invariants:
//   log_start_offset <= high_watermark <= log_end_offset
//   recovery_point <= log_end_offset: every byte below the recovery point has
//   been fsynced (with its indexes), so an unclean start need only scan from
//   the segment containing it.
//   last_stable_offset = min(first unstable offset, high watermark).
//
// Durability: Append* returns once the bytes are in the page cache
// ("appended"). Flush(offset) fsyncs segments below `offset` and then moves
// the recovery point ("flushed and fsynced").
//
// Thread safety: all public methods take the log's mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/status.h"
#include "log/leader_epoch_file_cache.h"
#include "log/log_config.h"
#include "log/log_segment.h"
#include "log/producer_state_manager.h"
#include "log/topic_partition.h"

namespace daruma {

// Segments by base offset; the last one is the active segment.
using SegmentMap = std::map<int64_t, std::unique_ptr<LogSegment>>;

// What a loader (recovery) hands to the Log it builds.
struct LoadedLogParts {
  // Owns the file system the parts were opened through when it is not
  // process-wide (a load's undo-log decorator); kept until the Log is gone.
  std::shared_ptr<void> file_system_owner;
  SegmentMap segments;
  int64_t log_start_offset = 0;
  int64_t recovery_point = 0;
  int64_t log_end_offset = 0;
  std::unique_ptr<ProducerStateManager> producer_state;
  std::unique_ptr<LeaderEpochFileCache> leader_epoch_cache;
};

struct LogAppendInfo {
  int64_t first_offset = -1;
  int64_t last_offset = -1;
  int64_t max_timestamp = -1;
  int64_t shallow_offset_of_max_timestamp = -1;
  int64_t log_append_time = -1;  // -1 unless LogAppendTime
  int64_t log_start_offset = 0;
  int32_t valid_bytes = 0;
  int32_t batches = 0;
  // Set when the whole append duplicates a batch already in the log (idempotent
  // retry): nothing was written and first/last offset are the original ones.
  bool duplicate = false;
};

enum class FetchIsolation { kLogEnd, kHighWatermark, kTxnCommitted };

struct FetchDataInfo {
  int64_t fetch_offset = 0;
  Bytes records;                                 // whole batches only
  std::vector<AbortedTxn> aborted_transactions;  // kTxnCommitted only
};

class Log {
 public:
  // Creates an empty log in `dir` (created if missing) with one segment at
  // `start_offset`.
  static Result<std::unique_ptr<Log>> CreateEmpty(FileSystem* fs, const std::string& dir,
                                                  const TopicPartition& tp, const LogConfig& config,
                                                  Clock* clock, int64_t start_offset = 0);
  // Wraps what a loader recovered. parts.segments must not be empty.
  static Result<std::unique_ptr<Log>> FromLoaded(FileSystem* fs, const std::string& dir,
                                                 const TopicPartition& tp, const LogConfig& config,
                                                 Clock* clock, LoadedLogParts parts);
  ~Log();
  Log(const Log&) = delete;
  Log& operator=(const Log&) = delete;

  // Leader append: validates every batch (size, CRC, magic 2, max message
  // size, record count), assigns offsets from the log end offset, stamps
  // `leader_epoch`, applies LogAppendTime if configured, checks producer
  // sequences/epochs (duplicates are acknowledged with their old offsets),
  // rolls if needed, appends, and updates producer state, transactions
  // (with .txnindex entries for aborts) and the leader-epoch cache.
  Result<LogAppendInfo> AppendAsLeader(ByteSpan records, int32_t leader_epoch,
                                       AppendOrigin origin = AppendOrigin::kClient);
  // The same without copying: offsets, epoch and LogAppendTime are written
  // into `records`, which afterwards hold exactly the bytes appended.
  Result<LogAppendInfo> AppendAsLeaderInPlace(std::span<uint8_t> records, int32_t leader_epoch,
                                              AppendOrigin origin = AppendOrigin::kClient);
  // Follower/replay append: offsets and epochs are taken as they are; they
  // must be increasing and start at or above the log end offset.
  Result<LogAppendInfo> AppendAsFollower(ByteSpan records);

  Result<FetchDataInfo> Read(int64_t start_offset, int32_t max_bytes, FetchIsolation isolation,
                             bool min_one_message);
  // The same into `out`, reusing the capacity of out->records: a consumer
  // fetching in a loop allocates and zero-fills its buffer only once.
  Status ReadInto(int64_t start_offset, int32_t max_bytes, FetchIsolation isolation,
                  bool min_one_message, FetchDataInfo* out);

  // Rolls a new active segment at max(expected_next_offset, log end offset),
  // taking a producer snapshot at its base.
  Status Roll(std::optional<int64_t> expected_next_offset = std::nullopt);
  // fsyncs every segment below `offset` (exclusive) and moves the recovery point.
  Status Flush(int64_t offset);
  Status FlushAll() { return Flush(log_end_offset()); }
  // Instead of FlushAll after a load whose only changes were files derived
  // from the segments, left unsynced (indexes, snapshots: `files`): if the
  // next unclean start, from the recovery point as it is, rebuilds each of
  // them (its segment is recovered; a snapshot lies above the first
  // recovered segment's base, so it is deleted unread), they may stay
  // unsynced until the next flush, which syncs them before it moves the
  // recovery point: returns true. Indexes the load rebuilt below the
  // segment holding the point (missing or corrupt ones, in `files` or left
  // deferred, IndexFile) lower the point to the lowest of their segments,
  // if the load rebuilt every segment from there up: the next unclean start
  // then redoes only what this load did.
  // Otherwise changes nothing and returns false (a file below the recovery
  // point needs the flush now).
  bool LeaveUnsyncedUntilFlush(std::vector<std::string> files);
  // Removes every offset >= `offset` (Kafka: segments above it are deleted,
  // the containing segment is cut at the first batch with last offset >=
  // offset; producer state is reloaded from the latest snapshot at or below
  // it and replayed up to it). Below the log start offset the log is emptied
  // and restarted there. Returns true if anything was removed.
  Result<bool> TruncateTo(int64_t offset);
  // Deletes every segment, snapshot and epoch entry; the log restarts empty at
  // `offset` (log start = log end = recovery point = high watermark).
  Status TruncateFullyAndStartAt(int64_t offset);
  // Clean shutdown of this log: producer snapshot at the log end, segments
  // closed (indexes trimmed, final time-index entries written).
  Status Close();
  // Creates, unsynced, the files of the indexes the load left deferred
  // (IndexFile): for a load whose transaction must record them, because the
  // recovery point found on disk lies above their segments and is not
  // lowered (LeaveUnsyncedUntilFlush returned false, or a load that commits
  // on its own).
  Status CreateDeferredIndexFiles();

  void UpdateHighWatermark(int64_t hw);
  // Raises the log start offset (retention, DeleteRecords): clamps the high
  // watermark and recovery point, truncates the epoch cache from the start.
  Status MaybeIncrementLogStartOffset(int64_t new_start);

  const TopicPartition& topic_partition() const { return tp_; }
  const std::string& dir() const { return dir_; }
  const LogConfig& config() const { return config_; }
  int64_t log_start_offset() const;
  int64_t log_end_offset() const;
  int64_t high_watermark() const;
  int64_t recovery_point() const;
  int64_t last_stable_offset() const;
  std::optional<int64_t> first_unstable_offset() const;
  int64_t size_in_bytes() const;
  size_t num_segments() const;
  std::vector<int64_t> segment_base_offsets() const;
  int64_t active_segment_base() const;
  int64_t active_segment_size() const;
  std::vector<EpochEntry> leader_epochs() const;
  // The newest epoch of the cache, without copying it (every append asks).
  std::optional<int32_t> latest_leader_epoch() const;
  // Kafka's endOffsetForEpoch (OffsetForLeaderEpoch): the epoch cache's
  // EndOffsetFor(requested_epoch, log end offset), read under the log's lock
  // so the cache and the log end agree. (-1, -1) when the epoch is unknown.
  EpochEntry EndOffsetForEpoch(int32_t requested_epoch) const;
  std::vector<AbortedTxn> AllAbortedTransactions() const;
  size_t active_producer_count() const;
  // Kafka's activeProducers (DescribeProducers): a copy of every active
  // producer's state, by producer id, taken under the log's lock.
  std::vector<ProducerSnapshotEntry> ActiveProducerEntries() const;
  ProducerStateManager& producer_state() { return *producer_state_; }
  // The first offset with timestamp >= ts (ListOffsets by time), or nullopt.
  Result<std::optional<std::pair<int64_t, int64_t>>> FetchOffsetByTimestamp(int64_t ts);
  // ListOffsets MAX_TIMESTAMP (-3): (timestamp, offset) of the first record
  // carrying the largest timestamp in the log, as Kafka finds it: the first
  // segment with the largest max timestamp, its first batch with that max
  // timestamp, that batch's first record with it. nullopt for an empty log.
  Result<std::optional<std::pair<int64_t, int64_t>>> FetchMaxTimestampOffset();
  // Segments (for retention/cleaner/tools). The caller holds no lock across calls.
  std::vector<LogSegment*> segments_for_inspection();

  // ---- Retention and flush bookkeeping (spec §11.2, §11.3; log_retention.cc) ----

  // What retention removed from the log: the segments (closed for appends,
  // their files already renamed to `*.deleted`) and the producer snapshots
  // renamed to `*.snapshot.deleted`. The caller deletes both physically after
  // file.delete.delay.ms (LogSegment::DeleteFiles, FileSystem::Remove).
  // Why retention removed a run of segments: Kafka's three breaches, in the
  // order DeleteOldSegments checks them.
  enum class RetentionCause { kLogStartOffset, kRetentionBytes, kRetentionMs };
  // One breach's deletions: segments[first, first + count) of the result.
  // `limit` is what was breached: the log start offset, retention.bytes or
  // retention.ms.
  struct RetentionBreach {
    RetentionCause cause = RetentionCause::kLogStartOffset;
    int64_t limit = 0;
    size_t first = 0;
    size_t count = 0;
  };
  struct RetentionResult {
    std::vector<std::unique_ptr<LogSegment>> segments;
    std::vector<std::string> deleted_snapshots;
    // DeleteOldSegments only (the cleaner's ReplaceSegments leaves both
    // unset): why each segment went, so the broker can log it as Kafka does,
    // and the log start offset after the deletions.
    std::vector<RetentionBreach> breaches;
    int64_t log_start_offset = -1;
  };
  // "log_start_offset", "retention.bytes", "retention.ms".
  static std::string_view RetentionCauseName(RetentionCause cause);
  // Kafka's deleteOldSegments at clock time now: segments wholly below the log
  // start offset; then, if cleanup.policy contains delete, by retention.bytes
  // and by retention.ms (largest timestamp per segment). Oldest first, stopping
  // at the first segment that fails; never a segment reaching above the high
  // watermark, never an empty last segment; rolls first when every segment
  // goes. The log start offset moves to the first remaining segment.
  Result<RetentionResult> DeleteOldSegments();
  // Replaces the topic configuration (a later roll gives new segments the new
  // sizes; retention and flushing use it at once).
  void UpdateConfig(const LogConfig& config);
  LogConfig config_snapshot() const;
  // Clock time of the last flush that moved the recovery point (Kafka's
  // lastFlushTime; creation time before the first flush).
  int64_t last_flush_ms() const;
  // Called after every flush that moved the recovery point, with the log's
  // lock held: it must be cheap and must not call back into this Log.
  void SetFlushListener(std::function<void()> listener);
  // Called (under the log's lock: it must not call back into the log) when a
  // write fails partway (see write_failure()).
  void SetWriteFailureListener(std::function<void(const Status&)> listener);
  // After an append, roll or flush failed partway, the files may hold bytes
  // the in-memory state does not account for (a record written but not its
  // index entry, data not known to be on disk). Kafka takes the log dir
  // offline at that point; the log stops writing too: every later append,
  // roll, flush and Close returns this error (kIoError kept as it was), so no
  // offset is ever handed out twice and nothing is claimed durable. The next
  // start is unclean for it and recovery validates what is on disk. OK until
  // then. Never waits for a write in progress.
  Status write_failure() const;
  // Kafka flushes the segments below a new one in a background task
  // ("flush-log"), not in the append that rolled. A roll calls `schedule`
  // (with the log's lock held: it must only enqueue) with the new segment's
  // base; when it returns true, the task it queued calls FlushAfterRoll with
  // that offset. Without a scheduler, or when it returns false, the roll
  // flushes inline.
  void SetRollFlushScheduler(std::function<bool(int64_t offset)> schedule);
  // That task: writes the files of the segments below `offset` back to disk
  // without holding the log's lock (appends to the new segment go on), then
  // Flush(offset), which finds them clean and only moves the recovery point
  // after syncing whatever is left. A segment removed meanwhile is skipped.
  Status FlushAfterRoll(int64_t offset);

  // ---- Log cleaner support (owner: log_cleaner.h; spec §11.6) -------------
  // One consistent view, taken under the log's lock, of what the cleaner
  // needs to choose and group segments. Segment pointers stay valid while
  // the cleaner runs because retention and truncation pause cleaning first
  // (LogCleaner::AbortAndPauseCleaning) and inactive segments never change.
  struct CleanerSegmentView {
    LogSegment* segment = nullptr;
    int64_t base_offset = 0;
    int64_t size = 0;
    int64_t offset_index_bytes = 0;  // entries x 8
    int64_t time_index_bytes = 0;    // entries x 12
    int64_t largest_timestamp = 0;   // Kafka's LogSegment.largestTimestamp
    int64_t last_modified_ms = 0;    // mtime of the .log
  };
  struct CleanerView {
    std::vector<CleanerSegmentView> segments;  // by base offset; the last is active
    int64_t log_start_offset = 0;
    int64_t log_end_offset = 0;
    int64_t last_stable_offset = 0;
  };
  Result<CleanerView> ViewForCleaner();
  // Kafka's lastRecordsOfActiveProducers: per active producer, the last
  // offset of its last data batch (nullopt if it has none cached) and its epoch.
  struct ProducerLastRecord {
    std::optional<int64_t> last_data_offset;
    int16_t producer_epoch = -1;
  };
  std::map<int64_t, ProducerLastRecord> LastRecordsOfActiveProducers() const;
  // Kafka's collectAbortedTransactions: entries with last offset >= start and
  // first offset < upper, from the segment containing `start` onwards.
  Result<std::vector<AbortedTxn>> CollectAbortedTransactions(int64_t start, int64_t upper) const;
  // Swap protocol steps 2-4 (spec §11.6, Kafka's replaceSegments). Each new
  // segment must be a flushed `.cleaned` segment of this log. In one critical
  // section: new files `.cleaned` -> `.swap` in descending base order (each
  // joining the segment map), every old segment (by base offset; all must
  // still be present and inactive) leaves the map and has its files renamed
  // to `.deleted`, new files `.swap` -> final names, directory fsync, then
  // producer snapshots of old bases no new segment took over are renamed
  // `.snapshot.deleted`. Returns both (old segments, snapshot paths), for the
  // caller to remove after file.delete.delay.ms as retention's are.
  Result<RetentionResult> ReplaceSegments(std::vector<std::unique_ptr<LogSegment>> new_segments,
                                          const std::vector<int64_t>& old_bases);
  // ---- end of log cleaner support -----------------------------------------

 private:
  Log(FileSystem* fs, std::string dir, TopicPartition tp, LogConfig config, Clock* clock);
  // What validation learnt about the batches of one append.
  struct BatchFacts {
    int64_t first_offset = -1;
    int64_t last_offset = -1;
    int64_t max_timestamp = -1;
    int64_t shallow_offset_of_max = -1;
    int32_t batches = 0;
  };
  // Validates every batch (Kafka's analyzeAndValidateRecords).
  static Result<BatchFacts> AnalyzeRecords(const std::string& where, ByteSpan records,
                                           const LogConfig& config);
  // Producer checks, roll, epoch cache, segment append, producer and
  // transaction state: everything after offsets are final.
  Result<LogAppendInfo> AppendLocked(ByteSpan records, const BatchFacts& facts, AppendOrigin origin,
                                     int64_t log_append_time);
  Status MaybeRoll(int32_t messages_size, const LogAppendInfo& info);
  Status RollLocked(std::optional<int64_t> expected_next_offset);
  Status FlushLocked(int64_t offset);
  Status SyncUnsyncedLoadFilesLocked();
  // Records `st` as the log's write failure (the first one stays) and
  // returns it; a lack of descriptors before anything was written
  // (`wrote_bytes` false) is returned as is, for a retry.
  Status FailWrites(const Status& st, bool wrote_bytes = false);
  Status TruncateFullyAndStartAtLocked(int64_t offset);
  // Applies the batches from the producer state's map end offset up to the
  // log end offset (after a reload from an older snapshot).
  Status ReplayProducerStateLocked();
  LogSegment* active() const { return segments_.rbegin()->second.get(); }
  int64_t LastStableOffsetLocked() const;
  // Retention helpers (log_retention.cc).
  using RetentionPredicate = std::function<Result<bool>(LogSegment& segment, LogSegment* next)>;
  Result<std::vector<int64_t>> DeletableSegmentsLocked(const RetentionPredicate& predicate);
  // Records the deletions in `out` as one breach of `cause` and `limit`.
  Result<int> DeleteSegmentsLocked(const std::vector<int64_t>& bases, RetentionCause cause,
                                   int64_t limit, RetentionResult* out);
  Status MaybeIncrementLogStartOffsetLocked(int64_t new_start);

  // First member, so destroyed last: fs_ may point into it.
  std::shared_ptr<void> file_system_owner_;
  FileSystem* fs_;
  std::string dir_;
  TopicPartition tp_;
  std::string name_;  // tp_.ToString(), for messages (not rebuilt per append)
  LogConfig config_;
  Clock* clock_;
  mutable std::mutex mu_;
  SegmentMap segments_;
  int64_t log_start_offset_ = 0;
  int64_t log_end_offset_ = 0;
  int64_t high_watermark_ = 0;
  int64_t recovery_point_ = 0;
  // Some segment may have an index a load left deferred (IndexFile): the
  // next flush creates it (FlushLocked).
  bool has_deferred_indexes_ = false;
  bool AnyDeferredIndexLocked() const;
  std::vector<std::string> unsynced_load_files_;  // LeaveUnsyncedUntilFlush
  int64_t unflushed_messages_ = 0;
  int64_t last_flush_ms_ = 0;
  std::function<void()> flush_listener_;
  std::function<void(const Status&)> write_failure_listener_;
  Status write_failure_;  // see write_failure()
  // A copy of write_failure_ for write_failure(), under a lock of its own:
  // /health asks every log, and must not wait for one whose mu_ a stuck
  // disk holds. Set (with mu_ held) once; lock order mu_, failure_mu_.
  mutable std::mutex failure_mu_;
  Status reported_failure_;
  std::function<bool(int64_t)> roll_flush_scheduler_;
  std::unique_ptr<ProducerStateManager> producer_state_;
  std::unique_ptr<LeaderEpochFileCache> leader_epoch_cache_;
};

}  // namespace daruma
