// Cleaner: one cleaning round over one log (Kafka's LogCleaner.Cleaner,
// spec §11.6). A cleaner thread owns one Cleaner and its offset map.
//
// A round, given the log's LogToClean:
//   1. Build the offset map (key -> latest offset) over
//      [first_dirty_offset, first_uncleanable_offset), skipping aborted
//      transactional batches, control batches and keyless records; stop after
//      the last batch mapped whole when the map reaches slots x load factor.
//      end_offset = latest mapped offset + 1 (the next first dirty offset).
//   2. Group the segments below end_offset (GroupSegmentsBySize) and rewrite
//      each group into `<first base>.*.cleaned` files: a record is kept iff
//      it lies beyond the map, or it is its key's latest offset and has a
//      value or its tombstone is still retained (no delete horizon yet, or
//      now < horizon). Aborted transactional batches are dropped; markers as
//      CleanedTransactionMetadata says; a batch holding an active producer's
//      last sequence (or its last marker), or ending exactly at
//      first_uncleanable_offset, stays as an empty batch. Unchanged batches
//      are copied byte for byte; others are re-encoded with the same codec,
//      base offset and last offset delta, gaining a delete horizon
//      (now + delete.retention.ms) the first time they keep a tombstone or a
//      discardable marker. Legacy (v0/v1) entries are kept or dropped
//      whole (see JudgeLegacyEntry in cleaner.cc for the exact rule).
//   3. Flush the cleaned segment (indexes trimmed, final time-index entry),
//      give its files the last source segment's mtime, and swap it in with
//      Log::ReplaceSegments (`.cleaned` -> `.swap` -> final; old -> `.deleted`).
// The caller writes end_offset to cleaner-offset-checkpoint afterwards.
//
// Errors: I/O errors are returned as kIoError (the caller takes the log dir
// offline); anything else (corrupt batch, offset overflow) as is, and the
// caller marks the partition uncleanable. A failed group's `.cleaned` files
// are removed; groups already swapped in stay (each swap is complete).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/status.h"
#include "log/cleanable_log.h"
#include "log/cleaned_txn_metadata.h"
#include "log/cleaner_config.h"
#include "log/log.h"
#include "log/offset_map.h"
#include "log/throttler.h"

namespace daruma {

struct CleanStats {
  int64_t first_dirty_offset = 0;
  int64_t end_offset = 0;  // next first dirty offset (for the checkpoint)
  int64_t map_bytes_read = 0;
  int64_t map_messages_read = 0;
  int64_t bytes_read = 0;  // by the rewrite
  int64_t bytes_written = 0;
  int64_t messages_read = 0;
  int64_t messages_written = 0;
  int64_t batches_read = 0;
  int64_t batches_written = 0;
  int64_t groups = 0;
  int64_t segments_replaced = 0;
  bool cleaned = false;  // false when there was nothing to clean
};

class Cleaner {
 public:
  // Receives what each swap replaced (segments whose files are already
  // `.deleted`, `.snapshot.deleted` paths); it must remove them now or after
  // file.delete.delay.ms (LogJobs::ScheduleFileDeletion does exactly that).
  using DisposeSegment = std::function<void(Log*, Log::RetentionResult)>;

  // `throttler` (shared by all threads) may be null for no throttling.
  Cleaner(FileSystem* fs, const CleanerConfig& config, Throttler* throttler);

  // One round over `log` (see the header comment). `to_clean` must come from
  // `view`, a fresh Log::ViewForCleaner() of the same log. Once `abort` (if
  // given) is set, the round stops at its next batch (or throttle sleep)
  // with kAborted: the group being written loses its `.cleaned` files,
  // groups already swapped in stay, and the checkpoint is not moved, so a
  // later round cleans from the same first dirty offset.
  Result<CleanStats> Clean(Log* log, const Log::CleanerView& view, const LogToClean& to_clean,
                           const CompactionConfig& config, int64_t now_ms,
                           const DisposeSegment& dispose, const std::atomic<bool>* abort = nullptr);

  const SkimpyOffsetMap& offset_map() const { return map_; }

 private:
  // Everything one cleaning round needs while rewriting batches.
  struct Round;

  Status BuildOffsetMap(Log* log, const Log::CleanerView& view, int64_t start, int64_t end,
                        CleanStats* stats);
  // Returns true when the map filled up inside this segment.
  Result<bool> BuildOffsetMapForSegment(const Log::CleanerSegmentView& seg, int64_t start,
                                        int64_t end, CleanedTransactionMetadata* txns,
                                        CleanStats* stats);
  Status CleanGroup(Round* round, const std::vector<size_t>& group);
  Status CleanInto(Round* round, const Log::CleanerSegmentView& source, LogSegment* dest);
  // Filters one v2 batch; appends what is retained (if anything) to `dest`.
  Status FilterBatch(Round* round, const RecordBatchView& batch, LogSegment* dest);
  bool ShouldRetainRecord(const RecordBatchView& batch, const Record& record, int64_t now) const;
  // Counts bytes against the throttler; kAborted once the round is aborted.
  Status Throttle(int64_t bytes);

  FileSystem* fs_;
  CleanerConfig config_;
  Throttler* throttler_;
  SkimpyOffsetMap map_;
  int64_t unthrottled_bytes_ = 0;
  const std::atomic<bool>* abort_ = nullptr;  // this round's
  std::string log_name_;                      // this round's, for messages
};

}  // namespace daruma
