#include "recovery/log_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "common/bytes.h"
#include "common/damage_kind.h"
#include "log/leader_epoch_file_cache.h"
#include "log/log_file_names.h"
#include "log/producer_snapshot_file.h"
#include "log/producer_state_manager.h"
#include "log/transaction_index.h"
#include "record/control_record.h"
#include "record/file_batch_reader.h"
#include "recovery/background_syncs.h"
#include "recovery/load_transaction.h"
#include "recovery/partition_dir_heal.h"
#include "recovery/producer_state_loader.h"
#include "recovery/quarantine.h"
#include "recovery/segment_scan_pipeline.h"
#include "recovery/segment_splitter.h"

namespace daruma {

namespace {

// The offset a file's name starts with, if it does (a quarantine manifest's
// firstOffset).
std::optional<int64_t> OffsetOfFileName(const std::string& name) {
  Result<int64_t> offset = OffsetFromFileName(name);
  return offset.ok() ? std::optional<int64_t>(*offset) : std::nullopt;
}

constexpr std::string_view kCheckpointDeletedSuffix = ".checkpoint.deleted";
constexpr std::string_view kDeletedDirSuffix = "-delete";
// Pass-5 segments whose fsyncs may be in flight at once (background_syncs.h):
// enough to overlap a slow disk's flushes, few enough to bound the threads.
constexpr size_t kMaxSyncsInFlight = 4;

std::string StripSuffix(const std::string& name, std::string_view suffix) {
  return name.substr(0, name.size() - suffix.size());
}

// A lazily checked index was rebuilt, possibly long after the load's report
// was written: it goes to stderr, as Kafka's log.warn would.
void WarnIndexRebuilt(const std::string& warning) {
  std::fprintf(stderr, "WARN %s\n", warning.c_str());
}

// One partition's load. Members hold what Kafka's LogLoader holds.
class Loader {
 public:
  Loader(const LoadLogParams& p, PartitionRecoveryReport* report)
      : p_(p),
        fs_(p.fs),
        dir_(p.partition_dir),
        report_(report),
        quarantine_(p.fs, p.partition_dir, p.tp.ToString(), p.quarantine, report),
        given_listing_(p.listing) {}

  Result<std::unique_ptr<Log>> Run();

 private:
  Result<std::vector<std::string>> RegularFileNames();
  // The regular files of the partition dir, listed again only if this load
  // changed the dir since the last listing (a clean start lists it once).
  // Points at listing_, which only a later call replaces: no caller loops
  // over the names across a call (copies of 17 names were three a load).
  Result<const std::vector<std::string>*> CurrentListing();
  std::string PathOf(const std::string& name) const { return JoinPath(dir_, name); }
  // Deletes (or, with quarantine, moves aside) one file Kafka deletes.
  Status DeleteFile(const std::string& path, const Quarantine::Range& range);
  // Deletes `path` whatever the quarantine, listed in the report's deleted
  // files (DeleteFile's own deletion).
  Status RemoveFile(const std::string& path);
  // Has `psm` copy a corrupt snapshot into quarantine when it reads one or
  // just before it deletes or renames one (each once per load).
  void QuarantineCorruptSnapshotsOf(ProducerStateManager* psm);
  Status QuarantineSnapshot(const std::string& path, const Status& why);
  Status QuarantineSnapshotIfCorrupt(const std::string& path);

  Result<std::vector<std::string>> RemoveTempFilesAndCollectSwaps();       // pass 1
  Status CompleteInterruptedSwaps(const std::vector<std::string>& swaps);  // passes 2-3
  Status LoadSegmentFiles();                                               // pass 4
  Status DropSegmentAfterOrderCut(int64_t base);
  // Opens leader-epoch-checkpoint; one that does not parse is quarantined
  // and the cache starts empty, to be rebuilt (RebuildEpochsIfNeeded).
  Status OpenLeaderEpochCache();
  Status RebuildEpochsIfNeeded();
  // Clean start: the active segment's log end offset when its tail is
  // whole; else recovers the segment and returns nullopt.
  Result<std::optional<int64_t>> RecoverDamagedActiveTail();
  // Scans the .log of segment `base` through a read-only handle of its own
  // (an open failure is the scan's I/O error).
  SegmentRecoveryScan ScanLogFile(int64_t base, std::optional<int64_t> next_base) const;
  // The base offset of the first segment after `base`, among the loaded
  // segments and the .log files pass 4 listed; nullopt for the last one.
  std::optional<int64_t> NextLogBase(int64_t base) const;
  // Recovers one segment (§10.4) from `scan` (scanned here if null). On an
  // offset overflow the segment is split and swapped (split_ holds the new
  // segments) and kOffsetOverflow returned: the caller retries its pass.
  // With `unsynced_snapshot`, the producer snapshot Kafka takes after the
  // segment is written without fsync and its manager handed out (the caller
  // syncs it, see SyncRecoveredSegment); else it is fsynced here.
  Result<int64_t> RecoverSegment(
      LogSegment* segment, const SegmentRecoveryScan* scan = nullptr,
      std::unique_ptr<ProducerStateManager>* unsynced_snapshot = nullptr);
  // Makes what pass 5 wrote for `segment` durable: its rebuilt indexes and the
  // snapshot of `psm` (may be null), on `syncs`.
  Status SyncRecoveredSegment(LogSegment* segment, std::unique_ptr<ProducerStateManager> psm,
                              BackgroundSyncs* syncs);
  Status SplitAndSwap(LogSegment* segment);  // §10.5
  Result<std::vector<std::unique_ptr<LogSegment>>> SplitCuttingUnsplittableTail(
      LogSegment* segment);
  // Remembers `segment`'s .txnindex before recovery rebuilds it.
  Status RememberTxnIndex(LogSegment* segment);
  // After the rebuild (or a truncation to the base): a .txnindex is never
  // shortened except together with the .log range it describes, and never
  // without a quarantine copy. Entries the rebuild from the .log did not find
  // although their marker is still in the segment (the producer state they
  // need was lost, say) are kept; if anything was dropped, the old bytes go
  // to quarantine first.
  Status KeepAbortedTxns(LogSegment* segment);
  // Pass 4 with Kafka's retry after an offset-overflow split.
  Status LoadSegmentFilesRetryingSplits();
  Result<int64_t> TruncateWholeSegment(LogSegment* segment);
  struct RecoveryOffsets {
    int64_t recovery_point = 0;
    int64_t next_offset = 0;
  };
  Result<RecoveryOffsets> RecoverLog();  // pass 5
  int64_t FirstUnflushedBase() const;
  Result<std::optional<int64_t>> RecoverSegmentsFrom(int64_t from);
  Status RemoveAndDeleteSegments(const std::vector<int64_t>& bases, DamageKind kind,
                                 const std::string& reason);
  void AddScanned(int64_t bytes);
  void SetRemaining(int64_t n) {
    if (p_.remaining_segments != nullptr) p_.remaining_segments->store(n);
  }
  void Warn(std::string message) { report_->warnings.push_back(std::move(message)); }
  // A warning that reports damage: also listed with its kind.
  void Warn(DamageKind kind, std::string message) {
    report_->damage.push_back({kind, message});
    Warn(std::move(message));
  }

  const LoadLogParams& p_;
  FileSystem* fs_;
  std::string dir_;
  PartitionRecoveryReport* report_;
  Quarantine quarantine_;
  SegmentMap segments_;
  std::set<int64_t> listed_log_bases_;  // the .log files pass 4 found
  // Segments whose pass-4 recovery (missing/corrupt index) was left to pass 5.
  std::set<int64_t> deferred_;
  std::unique_ptr<LeaderEpochFileCache> epochs_;
  std::unique_ptr<ProducerStateManager> psm_;
  // The segments an offset-overflow split just swapped in for old_base.
  struct SplitResult {
    int64_t old_base = 0;
    std::vector<std::unique_ptr<LogSegment>> segments;
  };
  std::optional<SplitResult> split_;
  // The .txnindex of the segment RecoverSegment is rebuilding, as it was
  // before (KeepAbortedTxns).
  struct OldTxnIndex {
    int64_t base = 0;
    std::vector<uint8_t> bytes;
    std::vector<AbortedTxn> entries;  // empty if the old file did not parse
  };
  std::optional<OldTxnIndex> old_txn_index_;
  // The next offset the last successful RecoverSegment left its segment
  // with, and the segment's size then. The log end offset is the active
  // segment's next offset: while that segment is the one recovered and its
  // size is unchanged, this is what LogSegment::ReadNextOffset would read
  // again from the tail (both are the last kept batch's last offset + 1, or
  // the base offset when none is kept).
  struct RecoveredTail {
    const LogSegment* segment = nullptr;
    int64_t size = 0;
    int64_t next_offset = 0;
  };
  std::optional<RecoveredTail> recovered_tail_;
  // `segment`'s next offset: from recovered_tail_ when it still holds, else
  // read from the segment's tail.
  Result<int64_t> NextOffsetOf(LogSegment* segment) const {
    if (recovered_tail_ && recovered_tail_->segment == segment &&
        recovered_tail_->size == segment->size()) {
      return recovered_tail_->next_offset;
    }
    return segment->ReadNextOffset();
  }
  // The last listing of the dir, and whether it still holds: every change
  // the loader makes to the dir's entries (deletes, renames, recovered
  // segments' snapshots and indexes) clears listing_current_. Snapshot files
  // change only where snapshots_changed_ is set, so pass 6 can take the
  // snapshot list from listing_ while that flag is clear.
  std::vector<std::string> listing_;
  bool listing_current_ = false;
  bool snapshots_changed_ = false;
  // Pass 1 found a segment renamed `.log.deleted`: a swap may have taken
  // the place of segments that are no longer there (CompleteInterruptedSwaps).
  bool found_deleted_segment_ = false;
  // The caller's listing (LoadLogParams::listing) until the first listing
  // takes it or the loader changes the dir before that.
  const std::vector<DirEntry>* given_listing_ = nullptr;
  void ListingIsStale() {
    listing_current_ = false;
    given_listing_ = nullptr;
  }
  // Pass 5's snapshots above the segment it recovers, left on disk until a
  // later segment's recovery writes the same bytes again or pass 5 ends
  // (ProducerStateManager::set_retired_snapshots). Used only while
  // retire_snapshots_ is set; empty otherwise.
  ProducerStateManager::SnapshotMap retired_snapshots_;
  // Snapshots copied into the quarantine by this load (each once).
  std::set<std::string> quarantined_snapshots_;
  // The bytes of each valid snapshot removed during the load, by offset: one
  // above the recovered end is the last record of producers whose batches
  // are gone, and goes to quarantine once that end is known.
  std::map<int64_t, std::pair<std::string, std::vector<uint8_t>>> removed_snapshots_;
  bool retire_snapshots_ = false;
  // Deletes the retired snapshots still on disk and stops retiring: from then
  // on the dir is as if each had been deleted when it was retired.
  Status StopRetiringSnapshots() {
    retire_snapshots_ = false;
    return DeleteRetiredSnapshots(fs_, &retired_snapshots_, [this](const std::string& path) {
      return QuarantineSnapshotIfCorrupt(path);
    });
  }
  // Retiring goes on only while segments recover whole: after an error, a
  // truncation or a split (`truncated`: RecoverSegment's result) what is
  // retired goes first, so what follows sees the dir as Kafka leaves it.
  Status StopRetiringUnlessWhole(const Result<int64_t>& truncated) {
    if (truncated.ok() && *truncated == 0 && !split_) return Status::Ok();
    return StopRetiringSnapshots();
  }
  std::set<std::string> warned_strays_;  // stray files already warned about
  // The leader-epoch-checkpoint did not parse and went to quarantine, or was
  // missing: the cache is rebuilt from the batches (OpenLeaderEpochCache).
  bool rebuild_epochs_ = false;
  bool epochs_file_missing_ = false;  // leader-epoch-checkpoint was not there
  // A clean start whose active segment RecoverDamagedActiveTail recovered.
  bool clean_tail_recovered_ = false;
  // The newest producer snapshot the load found (before any was removed).
  std::optional<int64_t> latest_snapshot_found_;
  // The segment whose recovery cut batches with out-of-order headers (pass 4
  // drops every later segment, DropSegmentAfterOrderCut).
  std::optional<int64_t> order_cut_base_;
  // The kind of the damage the last segment recovery cut at (its warning).
  DamageKind last_stop_kind_ = DamageKind::kTornTail;
};

void Loader::AddScanned(int64_t bytes) {
  report_->scanned_bytes += bytes;
  if (p_.scanned_bytes_progress != nullptr) p_.scanned_bytes_progress->fetch_add(bytes);
}

Result<std::vector<std::string>> Loader::RegularFileNames() {
  std::vector<DirEntry> listed;
  const std::vector<DirEntry>* entries = std::exchange(given_listing_, nullptr);
  if (entries == nullptr) {
    DARUMA_ASSIGN_OR_RETURN(listed, fs_->ListDir(dir_));
    entries = &listed;
  }
  std::vector<std::string> names;
  for (const DirEntry& e : *entries) {
    if (!e.is_regular) continue;
    // Not Kafka's (partition_dir_heal.h): no pass ever sees it.
    if (IsStrayPartitionFileName(e.name)) {
      if (warned_strays_.insert(e.name).second) {
        report_->stray_files.push_back(PathOf(e.name));
        Warn(DamageKind::kStrayFile,
             fmt::format("{}: not a Kafka file (a segment or snapshot suffix without an offset "
                         "name); left as found and not loaded",
                         PathOf(e.name)));
      }
      continue;
    }
    names.push_back(e.name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

Result<const std::vector<std::string>*> Loader::CurrentListing() {
  if (!listing_current_) {
    DARUMA_ASSIGN_OR_RETURN(listing_, RegularFileNames());
    listing_current_ = true;
  }
  return &listing_;
}

Status Loader::DeleteFile(const std::string& path, const Quarantine::Range& range) {
  if (!fs_->Exists(path)) return Status::Ok();
  if (quarantine_.enabled()) {
    ListingIsStale();
    report_->deleted_files.push_back(path);
    return quarantine_.MoveFile(path, range);
  }
  // No manifest line says why: the report does, with the kind.
  report_->damage.push_back({range.kind, fmt::format("{}: deleted: {}", path, range.reason)});
  return RemoveFile(path);
}

Status Loader::RemoveFile(const std::string& path) {
  ListingIsStale();
  report_->deleted_files.push_back(path);
  Status st = fs_->Remove(path);
  return st.IsNotFound() ? Status::Ok() : st;
}

// Kafka deletes a corrupt snapshot when it tries to load it (§10.6), and
// recovery deletes others unread (above a recovered segment, strays, below
// the log start) or renames them for deletion; a corrupt one goes aside
// first. The managers' hooks see each snapshot as it is found corrupt or
// just before it goes, so only those are read: an unclean start used to
// read every snapshot of the partition up front (four of a crashed
// partition's 64 system calls went to each), Kafka reads one.
Status Loader::QuarantineSnapshot(const std::string& path, const Status& why) {
  if (!quarantined_snapshots_.insert(path).second) return Status::Ok();
  DARUMA_ASSIGN_OR_RETURN(uint64_t size, fs_->FileSize(path));
  return quarantine_.CopyRange(path, 0, int64_t(size),
                               {DamageKind::kCorruptSnapshot, std::nullopt, std::nullopt,
                                "corrupt producer snapshot: " + why.message()});
}

Status Loader::QuarantineSnapshotIfCorrupt(const std::string& path) {
  if (!quarantine_.enabled() || quarantined_snapshots_.count(path) > 0) return Status::Ok();
  Result<std::vector<uint8_t>> bytes = fs_->ReadFile(path);
  if (!bytes.ok()) return bytes.status().IsNotFound() ? Status::Ok() : bytes.status();
  auto read = DecodeProducerSnapshot(*bytes, path);
  if (read.ok()) {
    if (std::optional<int64_t> offset = OffsetOfFileName(BaseName(path))) {
      removed_snapshots_[*offset] = {path, std::move(*bytes)};
    }
    return Status::Ok();
  }
  if (!read.status().IsCorruption()) return read.status();
  return QuarantineSnapshot(path, read.status());
}

void Loader::QuarantineCorruptSnapshotsOf(ProducerStateManager* psm) {
  if (!quarantine_.enabled()) return;
  psm->set_corrupt_snapshot_hook(
      [this](const std::string& path, const Status& why) { return QuarantineSnapshot(path, why); });
  psm->set_removal_hook(
      [this](const std::string& path) { return QuarantineSnapshotIfCorrupt(path); });
}

// Pass 1 (§10.3).
Result<std::vector<std::string>> Loader::RemoveTempFilesAndCollectSwaps() {
  DARUMA_ASSIGN_OR_RETURN(const std::vector<std::string>* names, CurrentListing());
  std::vector<std::string> swaps, cleaned;
  int64_t min_cleaned = std::numeric_limits<int64_t>::max();
  // A `.deleted` file is one the log deleted and a crash kept; Kafka
  // removes it here. Kafka renames segments `.deleted` for retention and
  // DeleteRecords (a prefix of the log), a finished compaction or split
  // (never of the active segment), and a truncation (start-up recovery cut
  // damage, a follower truncated), which leaves them at or above the base of
  // the segment that is then last. Below the last live segment, with no
  // `.swap` beside it (a replacement cut short, whose damaged swap it may
  // back up), its records were deleted by the topic's policy or a user:
  // removed, as Kafka does, not kept in the quarantine for good. Otherwise
  // it may be the only copy of records past a cut: quarantined.
  const bool replacing = std::any_of(names->begin(), names->end(), [](const std::string& name) {
    return HasSuffix(name, kSwapFileSuffix);
  });
  std::optional<int64_t> last_live_base;
  for (const std::string& name : *names) {
    if (!HasSuffix(name, kLogFileSuffix)) continue;
    if (std::optional<int64_t> base = OffsetOfFileName(name)) {
      last_live_base = std::max(last_live_base.value_or(*base), *base);
    }
  }
  auto superseded = [&](const std::string& name) {
    if (replacing || !last_live_base) return false;
    std::optional<int64_t> base = OffsetOfFileName(name);
    return base && *base < *last_live_base;
  };
  for (const std::string& name : *names) {
    if (HasSuffix(name, kDeletedFileSuffix) && !HasSuffix(name, kCheckpointDeletedSuffix)) {
      if (HasSuffix(StripSuffix(name, kDeletedFileSuffix), kLogFileSuffix)) {
        found_deleted_segment_ = true;
      }
      DARUMA_RETURN_IF_ERROR(
          superseded(name)
              ? RemoveFile(PathOf(name))
              : DeleteFile(PathOf(name), {DamageKind::kLeftoverTempFile, std::nullopt, std::nullopt,
                                          "leftover .deleted file (pass 1)"}));
    } else if (HasSuffix(name, kCleanedFileSuffix)) {
      DARUMA_ASSIGN_OR_RETURN(int64_t offset, OffsetFromFileName(name));
      min_cleaned = std::min(min_cleaned, offset);
      cleaned.push_back(name);
    } else if (HasSuffix(name, kSwapFileSuffix)) {
      swaps.push_back(name);
    }
  }
  std::vector<std::string> valid_swaps;
  for (const std::string& name : swaps) {
    DARUMA_ASSIGN_OR_RETURN(int64_t offset, OffsetFromFileName(name));
    if (offset >= min_cleaned) {
      DARUMA_RETURN_IF_ERROR(
          DeleteFile(PathOf(name), {DamageKind::kInterruptedSwap, std::nullopt, std::nullopt,
                                    "incomplete split: .swap at/above a .cleaned offset"}));
    } else {
      valid_swaps.push_back(name);
    }
  }
  for (const std::string& name : cleaned) {
    DARUMA_RETURN_IF_ERROR(
        DeleteFile(PathOf(name), {DamageKind::kLeftoverTempFile, std::nullopt, std::nullopt,
                                  "leftover .cleaned file (pass 1)"}));
  }
  return valid_swaps;
}

// Passes 2 and 3 (§10.3).
Status Loader::CompleteInterruptedSwaps(const std::vector<std::string>& swaps) {
  // Pass 1 deleted every .swap it did not return, so with none returned there
  // is nothing to replace or rename (and no directory to list twice).
  if (swaps.empty()) return Status::Ok();
  ListingIsStale();
  snapshots_changed_ = true;  // pass 2 deletes snapshots in the swapped range
  int64_t min_swap = std::numeric_limits<int64_t>::max();
  int64_t max_swap = std::numeric_limits<int64_t>::min();
  std::vector<std::string> damaged;  // why each damaged .log.swap is
  for (const std::string& name : swaps) {
    if (!HasSuffix(StripSuffix(name, kSwapFileSuffix), kLogFileSuffix)) continue;
    DARUMA_ASSIGN_OR_RETURN(int64_t base, OffsetFromFileName(name));
    DARUMA_ASSIGN_OR_RETURN(auto segment, LogSegment::Open(fs_, dir_, base, p_.config, true,
                                                           std::string(kSwapFileSuffix)));
    // A .swap is a clean's or a split's whole output, written and flushed
    // as .cleaned before the rename: it should scan as whole batches to its
    // end. (A split copies batches as they are, so a damaged batch of the
    // old segment can be in it, and so in the old segment too.)
    const SegmentRecoveryScan scan = segment->ScanForRecovery();
    if (scan.error.IsIoError()) return scan.error;
    const bool whole =
        scan.error.ok() && scan.stop_reason.empty() && scan.valid_bytes == segment->size();
    int64_t next = base;
    if (whole) {
      DARUMA_ASSIGN_OR_RETURN(next, segment->ReadNextOffset());
    } else {
      damaged.push_back(fmt::format("{} ({})", PathOf(name),
                                    !scan.error.ok()            ? scan.error.message()
                                    : !scan.stop_reason.empty() ? scan.stop_reason
                                                                : "valid bytes end early"));
      // Kafka's range, where it can be read: used only if the swap is
      // finished anyway (below).
      if (Result<int64_t> read = segment->ReadNextOffset(); read.ok()) next = *read;
    }
    DARUMA_RETURN_IF_ERROR(segment->Close());
    min_swap = std::min(min_swap, base);
    max_swap = std::max(max_swap, next);
  }
  // A damaged .swap while every segment it replaces is still here (none
  // was renamed .deleted yet): finishing it would replace whole segments
  // with bytes that do not hold up (a garbage .swap whose range read as
  // empty was renamed over the valid .log of its name). The swaps of one
  // operation go together, so all of them go to quarantine and the old
  // segments stay. Once an old segment was renamed .deleted (pass 1 set it
  // aside), the swap is finished as Kafka finishes it, and the recovery of
  // the segment it becomes cuts the damage into quarantine.
  if (!damaged.empty() && !found_deleted_segment_) {
    for (const std::string& why : damaged) {
      Warn(
          fmt::format("{}: an interrupted swap that is not whole batches; not finished, the "
                      "segments it would replace are kept",
                      why));
    }
    DARUMA_ASSIGN_OR_RETURN(std::vector<std::string> names, RegularFileNames());
    // The .log.swap files last: a crash in between leaves them, so the next
    // start sets the rest aside too instead of renaming orphaned index swaps
    // over the kept segments' indexes.
    for (const bool log_swaps : {false, true}) {
      for (const std::string& name : names) {
        if (!HasSuffix(name, kSwapFileSuffix)) continue;
        if (HasSuffix(StripSuffix(name, kSwapFileSuffix), kLogFileSuffix) != log_swaps) continue;
        DARUMA_RETURN_IF_ERROR(DeleteFile(
            PathOf(name), {DamageKind::kInterruptedSwap, OffsetOfFileName(name), std::nullopt,
                           "an interrupted swap that is not whole batches (pass 2)"}));
      }
    }
    return fs_->SyncDir(dir_);
  }
  DARUMA_ASSIGN_OR_RETURN(std::vector<std::string> names, RegularFileNames());
  for (const std::string& name : names) {
    if (HasSuffix(name, kSwapFileSuffix)) continue;
    auto offset = OffsetFromFileName(name);
    if (!offset.ok()) continue;  // no numeric prefix: not a segment or snapshot file
    if (*offset >= min_swap && *offset < max_swap) {
      DARUMA_RETURN_IF_ERROR(
          DeleteFile(PathOf(name), {DamageKind::kInterruptedSwap, *offset, std::nullopt,
                                    "replaced by an interrupted swap (pass 2)"}));
    }
  }
  DARUMA_ASSIGN_OR_RETURN(names, RegularFileNames());
  const std::set<std::string> present(names.begin(), names.end());
  for (const std::string& name : names) {
    if (!HasSuffix(name, kSwapFileSuffix)) continue;
    // A file of the final name outside the swapped range (an empty .swap's
    // range is empty) is replaced, as Kafka's rename replaces it: aside
    // first, so its bytes are kept.
    const std::string final_name = StripSuffix(name, kSwapFileSuffix);
    if (present.count(final_name) > 0) {
      DARUMA_RETURN_IF_ERROR(
          DeleteFile(PathOf(final_name),
                     {DamageKind::kInterruptedSwap, OffsetOfFileName(final_name), std::nullopt,
                      "replaced by an interrupted swap of the same name (pass 3)"}));
    }
    DARUMA_RETURN_IF_ERROR(fs_->Rename(PathOf(name), PathOf(final_name)));
  }
  return fs_->SyncDir(dir_);
}

// Pass 4 (§10.3).
// The base of the first segment pass 5 will recover on this start, or nullopt
// after a clean shutdown (pass 5 recovers nothing). Pass 5 recovers the segment
// holding the recovery point and every later one.
std::optional<int64_t> FirstSegmentRecoveredInPass5(const std::vector<std::string>& names,
                                                    const LoadLogParams& p) {
  if (p.had_clean_shutdown) return std::nullopt;
  std::set<int64_t> bases;
  for (const std::string& name : names) {
    if (!HasSuffix(name, kLogFileSuffix)) continue;
    if (auto base = OffsetFromFileName(name); base.ok()) bases.insert(*base);
  }
  if (bases.empty()) return std::nullopt;
  auto it = bases.upper_bound(p.recovery_point_checkpoint);  // as RecoverLog picks
  if (it != bases.begin()) --it;
  return *it;
}

SegmentRecoveryScan Loader::ScanLogFile(int64_t base, std::optional<int64_t> next_base) const {
  const std::string path = LogFileName(dir_, base);
  Result<std::unique_ptr<File>> file = fs_->Open(path, OpenMode::kRead);
  Result<uint64_t> size = file.ok() ? (*file)->Size() : Result<uint64_t>(file.status());
  if (!size.ok()) {
    SegmentRecoveryScan failed;
    failed.next_offset = failed.v2_next_offset = base;
    failed.reader_stop = StopReason::kIoError;
    failed.stop_reason = size.status().ToString();
    failed.error = size.status();
    return failed;
  }
  return ScanSegmentForRecovery(file->get(), path, base, int64_t(*size),
                                p_.config.index_interval_bytes, next_base);
}

std::optional<int64_t> Loader::NextLogBase(int64_t base) const {
  std::optional<int64_t> next;
  if (auto it = segments_.upper_bound(base); it != segments_.end()) next = it->first;
  if (auto it = listed_log_bases_.upper_bound(base); it != listed_log_bases_.end()) {
    next = next ? std::min(*next, *it) : *it;
  }
  return next;
}

// Rule 1 in pass 4 (issue 22): an index rebuild that cut a segment at a
// batch whose CRC-uncovered header fields contradict its neighbours trusts
// nothing after the cut, so the segments after it go to quarantine whole, as
// pass 5 removes the segments after a truncated one. (Kafka stops its load
// there with an invalid-offset error; after a plain CRC failure in pass 4 it
// keeps the later segments, and so does Daruma.)
Status Loader::DropSegmentAfterOrderCut(int64_t base) {
  Warn(DamageKind::kAfterDamage,
       fmt::format("{}: after the cut in segment {} (batch headers out of order), the later "
                   "segment {} is not trusted and goes to quarantine",
                   dir_, *order_cut_base_, base));
  const Quarantine::Range why{DamageKind::kAfterDamage, base, std::nullopt,
                              fmt::format("segment after a cut at out-of-order batch headers in "
                                          "segment {} (pass 4)",
                                          *order_cut_base_)};
  for (const std::string& path : {LogFileName(dir_, base), OffsetIndexFileName(dir_, base),
                                  TimeIndexFileName(dir_, base), TxnIndexFileName(dir_, base)}) {
    DARUMA_RETURN_IF_ERROR(DeleteFile(path, why));
  }
  snapshots_changed_ = true;
  return Status::Ok();
}

Status Loader::LoadSegmentFiles() {
  order_cut_base_.reset();
  DARUMA_ASSIGN_OR_RETURN(const std::vector<std::string>* listing, CurrentListing());
  const std::vector<std::string>& names = *listing;
  for (const std::string& name : names) {
    if (!HasSuffix(name, kLogFileSuffix)) continue;
    if (Result<int64_t> b = OffsetFromFileName(name); b.ok()) listed_log_bases_.insert(*b);
  }
  const std::optional<int64_t> first_in_pass5 = FirstSegmentRecoveredInPass5(names, p_);
  auto in_pass5 = [&](int64_t base) { return first_in_pass5 && base >= *first_in_pass5; };
  // Which files exist is read from this one listing, not asked per file: a
  // start of 10,000 partitions saves ~200,000 system calls. Pass 4 creates
  // and deletes no .log file and, for segment B, changes only B's own files.
  auto listed = [&names](const std::string& name) {
    return std::binary_search(names.begin(), names.end(), name);
  };
  // Kafka recovers here, one after another, every segment whose offset index
  // is missing and that pass 5 will not recover. Their scans are read-only
  // and each reads only its own .log, which nothing changes before its turn,
  // so with spare recovery threads they run ahead, as in pass 5 (a clean
  // start after the indexes were lost then uses every thread too).
  std::vector<int64_t> ahead;  // in the order the loop below meets them
  for (const std::string& name : names) {
    if (!HasSuffix(name, kLogFileSuffix)) continue;
    Result<int64_t> base = OffsetFromFileName(name);
    if (base.ok() && !listed(OffsetIndexFileName("", *base)) && !in_pass5(*base)) {
      ahead.push_back(*base);
    }
  }
  std::optional<SegmentScanPipeline> pipeline;
  if ((p_.recovery_threads > 1 || p_.scan_help != nullptr) && ahead.size() > 1) {
    std::vector<SegmentScanPipeline::Scan> scans;
    for (int64_t base : ahead) {
      const std::optional<int64_t> next_base = NextLogBase(base);
      scans.push_back([this, base, next_base] { return ScanLogFile(base, next_base); });
    }
    pipeline.emplace(std::move(scans), p_.recovery_threads, p_.scan_help);
  }
  size_t taken = 0;
  // Kafka recovers a segment with a missing or corrupt index here, and then
  // again in pass 5 when it lies at or after the recovery point: two scans.
  // Daruma defers such a segment to pass 5, which rebuilds the same indexes in
  // its one scan; RecoverLog keeps Kafka's visible pass-4 semantics for it.
  // Two orderings differ, both only when earlier segments at or after the
  // recovery point are themselves damaged or carry epochs the checkpoint
  // lacks: Kafka's out-of-order pass-4 rebuild reads those earlier segments
  // unvalidated (a zero-filled tail there aborts its start-up, Daruma
  // truncates it first) and assigns this segment's epochs before theirs
  // (Daruma assigns every epoch in offset order, as a full rescan would).
  auto recover_now_or_defer = [&](LogSegment* segment) -> Status {
    const int64_t base = segment->base_offset();
    if (in_pass5(base)) {
      deferred_.insert(base);
      return Status::Ok();
    }
    Result<int64_t> truncated = 0;
    if (pipeline && taken < ahead.size() && ahead[taken] == base) {
      const SegmentRecoveryScan scan = pipeline->Take(taken++);
      truncated = RecoverSegment(segment, &scan);
    } else {
      truncated = RecoverSegment(segment);
    }
    DARUMA_RETURN_IF_ERROR(StopRetiringUnlessWhole(truncated));
    return truncated.status();
  };
  for (const std::string& name : names) {
    if (IsIndexFileName(name)) {
      DARUMA_ASSIGN_OR_RETURN(int64_t offset, OffsetFromFileName(name));
      if (!listed(LogFileName("", offset))) {
        Warn(DamageKind::kOrphanIndex,
             fmt::format("Found an orphaned index file {}, with no corresponding log file.",
                         PathOf(name)));
        DARUMA_RETURN_IF_ERROR(DeleteFile(PathOf(name), {DamageKind::kOrphanIndex, std::nullopt,
                                                         std::nullopt, "orphaned index file"}));
      }
      continue;
    }
    if (!HasSuffix(name, kLogFileSuffix)) continue;
    DARUMA_ASSIGN_OR_RETURN(int64_t base, OffsetFromFileName(name));
    if (order_cut_base_ && base > *order_cut_base_) {
      // The pipeline may be scanning this segment ahead: it stops before
      // the segment's files go (its contract), and nothing is taken after.
      if (pipeline) pipeline->Stop();
      DARUMA_RETURN_IF_ERROR(DropSegmentAfterOrderCut(base));
      continue;
    }
    const bool time_index_existed = listed(TimeIndexFileName("", base));
    DARUMA_ASSIGN_OR_RETURN(auto segment, LogSegment::Open(fs_, dir_, base, p_.config, true));
    if (!listed(TxnIndexFileName("", base))) segment->txn_index()->AssumeAbsent();
    if (!listed(OffsetIndexFileName("", base))) {
      if (p_.had_clean_shutdown || base < p_.recovery_point_checkpoint) {
        Warn(DamageKind::kMissingIndex,
             fmt::format("Could not find offset index file corresponding to log file {}, "
                         "recovering segment and rebuilding index files...",
                         segment->log_path()));
      }
      // Kafka: an invalid-offset error here aborts the load (§15.6).
      DARUMA_RETURN_IF_ERROR(recover_now_or_defer(segment.get()));
    } else {
      if (!time_index_existed) {
        ListingIsStale();
        DARUMA_ASSIGN_OR_RETURN(TimeIndex * ti, segment->time_index());
        DARUMA_RETURN_IF_ERROR(ti->Resize(0));
      }
      // A missing .txnindex has no entries to check. Fixed behaviour: Kafka's
      // reader throws a plain KafkaException on an entry whose version byte is
      // > 0, which is not a CorruptIndexException and so aborts the broker's
      // start-up; Daruma counts it as the corrupt index it is and rebuilds
      // the segment's indexes from the .log like any other.
      Status sane =
          listed(TxnIndexFileName("", base)) ? segment->SanityCheckTxnIndex() : Status::Ok();
      // Beyond Kafka: an index that pass 5 will not rebuild (clean shutdown,
      // or below the recovery point) is checked entry by entry -- when it is
      // first loaded, not here, so a clean start reads no index it does not
      // use -- and a corrupt one is then rebuilt read-only from the .log. A
      // bad entry would otherwise lower the log end offset or send a fetch
      // into the middle of a batch.
      const bool rebuilt_later = first_in_pass5 && base >= *first_in_pass5;
      if (sane.ok() && !rebuilt_later) segment->VerifyIndexesOnFirstLoad(WarnIndexRebuilt);
      if (!sane.ok()) {
        if (!sane.IsCorruption()) return sane;
        Warn(DamageKind::kCorruptIndex,
             fmt::format("Found a corrupted index file corresponding to log file {} due to {}, "
                         "recovering segment and rebuilding index files...",
                         segment->log_path(), sane.message()));
        DARUMA_RETURN_IF_ERROR(recover_now_or_defer(segment.get()));
      }
    }
    segments_[base] = std::move(segment);
  }
  return Status::Ok();
}

Result<int64_t> Loader::RecoverSegment(LogSegment* segment, const SegmentRecoveryScan* scan,
                                       std::unique_ptr<ProducerStateManager>* unsynced_snapshot) {
  recovered_tail_.reset();
  const int64_t base = segment->base_offset();
  // Until snapshots change, listing_ names them all (pass 6 relies on the
  // same): the first segment recovered, usually the only one after a crash,
  // takes them from there instead of listing the dir again.
  const std::vector<std::string>* snapshot_names = snapshots_changed_ ? nullptr : &listing_;
  ListingIsStale();  // it writes indexes and a snapshot
  snapshots_changed_ = true;
  DARUMA_ASSIGN_OR_RETURN(
      auto psm, ProducerStateManager::Open(p_.tp.ToString(), dir_, fs_,
                                           p_.config.producer_id_expiration_ms, snapshot_names));
  QuarantineCorruptSnapshotsOf(psm.get());
  if (retire_snapshots_) psm->set_retired_snapshots(&retired_snapshots_);
  int64_t scanned = 0;
  DARUMA_RETURN_IF_ERROR(RebuildProducerState(
      psm.get(), segments_, {p_.log_start_offset_checkpoint, base, false, p_.clock->NowMs()},
      &scanned));
  AddScanned(scanned);
  SegmentRecoveryScan inline_scan;
  if (scan == nullptr) {
    // Pass 4 loads segments in listing order, so the next one may not be
    // loaded yet: its base comes from the listing.
    inline_scan = segment->ScanForRecovery(NextLogBase(base));
    scan = &inline_scan;
  }

  // The next offset of the last batch recovery keeps (for the manifest).
  int64_t next_offset = scan->v2_next_offset;
  std::string visitor_error;
  // The cache's latest epoch, kept here: looking it up per batch costs more
  // than the rest of this visitor.
  std::optional<int32_t> latest_epoch = epochs_->LatestEpoch();
  // The manager's end offset follows every v2 batch (§10.4), also those the
  // scan did not retain: each visit first catches up to the batch before it.
  size_t visited = 0;
  bool visitor_stopped = false;
  auto on_batch = [&](const LogEntry& entry) -> Status {
    const SegmentRecoveryScan::Batch& retained = scan->batches[visited++];
    psm->UpdateMapEndOffset(retained.prev_v2_next_offset);
    RecordBatchView batch = entry.batch();
    const int32_t epoch = batch.partition_leader_epoch();
    if (epoch >= 0 && (!latest_epoch || epoch > *latest_epoch)) {
      DARUMA_RETURN_IF_ERROR(epochs_->Assign(epoch, batch.base_offset()));
      latest_epoch = epochs_->LatestEpoch();
    }
    if (batch.has_producer_id()) {
      auto completed = psm->ApplyBatch(batch);
      if (!completed.ok()) {
        visitor_error = completed.status().message();
        next_offset = batch.last_offset() + 1;
        visitor_stopped = true;
        return completed.status();
      }
      if (*completed) {
        const CompletedTxn& txn = **completed;
        if (txn.is_aborted) {
          // The scan may have left out transactions open here (local_lso).
          const int64_t lso = std::min(psm->LastStableOffset(txn), retained.local_lso);
          DARUMA_RETURN_IF_ERROR(segment->BufferTxnIndexUpdate(
              {txn.producer_id, txn.first_offset, txn.last_offset, lso}));
        }
        DARUMA_RETURN_IF_ERROR(psm->CompleteTxn(txn));
      }
    }
    psm->UpdateMapEndOffset(batch.last_offset() + 1);
    return Status::Ok();
  };
  // What the first byte recovery does not keep is, as the scan (or the
  // visitor, for a record it cannot apply) found it.
  auto before_truncate = [&](int64_t valid, int64_t size) -> Status {
    last_stop_kind_ = visitor_stopped ? DamageKind::kInvalidRecord
                                      : scan->stop_kind.value_or(DamageKind::kTornTail);
    if (!quarantine_.enabled()) return Status::Ok();
    const std::string why = visitor_stopped
                                ? fmt::format("{}: invalid record after position {}: {}",
                                              segment->log_path(), valid, visitor_error)
                                : scan->stop_reason;
    return quarantine_.CopyRange(segment->log_path(), valid, size,
                                 {last_stop_kind_, next_offset, std::nullopt, why});
  };
  const int64_t size_before = segment->size();
  DARUMA_RETURN_IF_ERROR(RememberTxnIndex(segment));
  // The last segment's indexes get their full size back at the end of the
  // load: left at that size now, they need no size change at all.
  const bool active = !segments_.empty() && segments_.rbegin()->second.get() == segment &&
                      !HasSuffix(dir_, kDeletedDirSuffix);
  auto recovered = segment->ApplyRecovery(*scan, on_batch, before_truncate,
                                          active ? p_.config.segment_index_bytes : 0);
  if (!recovered.ok()) {
    if (recovered.status().code() == StatusCode::kOffsetOverflow) {
      Warn(DamageKind::kOffsetOverflow,
           fmt::format("Caught segment overflow error: {}. Split segment and retry.",
                       recovered.status().message()));
      DARUMA_RETURN_IF_ERROR(SplitAndSwap(segment));
    }
    return recovered.status();
  }
  if (!visitor_stopped) psm->UpdateMapEndOffset(scan->v2_next_offset);
  if (scan->first_gap && !p_.config.compact && scan->first_gap->position < segment->size()) {
    // Kept as Kafka keeps it (a log compacted earlier has such gaps), but a
    // topic that is not compacted has none unless a baseOffset the CRC does
    // not cover was damaged where no later batch contradicts it.
    const auto& g = *scan->first_gap;
    Warn(DamageKind::kOffsetGap,
         fmt::format("{}: batch at position {} starts at offset {}, the batch before it ends at "
                     "{}: an offset gap in a topic that is not compacted (cleanup.policy=delete), "
                     "kept as found; a damaged baseOffset (outside the batch CRC) is the likeliest "
                     "cause unless the topic was compacted once",
                     segment->log_path(), g.position, g.base_offset, g.previous_last));
  }
  if (scan->uncovered_field_damage && recovered->truncated_bytes > 0) {
    order_cut_base_ = segment->base_offset();
  }
  DARUMA_RETURN_IF_ERROR(KeepAbortedTxns(segment));
  AddScanned(size_before);
  report_->recovered_segments++;
  report_->rebuilt_indexes.push_back(segment->offset_index_path());
  report_->rebuilt_indexes.push_back(segment->time_index_path());
  DARUMA_RETURN_IF_ERROR(psm->TakeSnapshot(/*sync=*/unsynced_snapshot == nullptr).status());
  if (unsynced_snapshot != nullptr) *unsynced_snapshot = std::move(psm);
  // Below base only if the last offset + 1 wrapped (ReadNextOffset refuses
  // such a batch): left to ReadNextOffset then.
  if (recovered->next_offset >= base) {
    recovered_tail_ = RecoveredTail{segment, segment->size(), recovered->next_offset};
  }
  return recovered->truncated_bytes;
}

// Runs after the loading thread is done with `segment` in pass 5: from then
// on pass 5 only reads it (a later segment's producer-state rebuild may scan
// it), and a sync job writes nothing but index bytes already in memory (it
// creates the files of deferred indexes, IndexFile). The job's fsyncs make
// Log::FlushAll's index syncs no-ops; the .log itself is left to FlushAll,
// which syncs every segment's .log anyway.
Status Loader::SyncRecoveredSegment(LogSegment* segment, std::unique_ptr<ProducerStateManager> psm,
                                    BackgroundSyncs* syncs) {
  DARUMA_ASSIGN_OR_RETURN(OffsetIndex * oi, segment->offset_index());
  DARUMA_ASSIGN_OR_RETURN(TimeIndex * ti, segment->time_index());
  std::shared_ptr<ProducerStateManager> owner = std::move(psm);
  return syncs->Run([oi, ti, owner]() -> Status {
    DARUMA_RETURN_IF_ERROR(ti->Flush());  // first, as LogSegment::Flush
    DARUMA_RETURN_IF_ERROR(oi->Flush());
    return owner != nullptr ? owner->SyncPendingSnapshots() : Status::Ok();
  });
}

// Spec §10.5 step 4 (Kafka's LocalLog.replaceSegments for one old segment):
// `.cleaned` -> `.swap` highest base first, the old segment -> `.deleted`,
// `.swap` -> final names lowest first, directory fsync. A crash before the
// last `.swap` rename leaves a `.cleaned` file at or below every `.swap`, so
// pass 1 restores the old segment; after it, passes 2-3 finish the swap.
// The old files become `.deleted` (Kafka deletes them after
// file.delete.delay.ms; the next load's pass 1 does) or, with quarantine,
// move to the quarantine like every file Kafka removes (a batch whose base
// offset, which no CRC covers, was damaged looks like an overflow too). The
// new segments wait in split_.
Status Loader::SplitAndSwap(LogSegment* segment) {
  const int64_t old_base = segment->base_offset();
  ListingIsStale();
  snapshots_changed_ = true;
  DARUMA_ASSIGN_OR_RETURN(auto fresh, SplitCuttingUnsplittableTail(segment));
  // Kafka's split copies every batch, also those past a corrupt one, and
  // opens a segment wherever an offset does not fit the one before: a
  // damaged baseOffset below the old segment's base (negative, even) would
  // become a segment below data already in the log, one recovery never
  // reaches. Such offsets are damage (issue 22 rule 1): those segments are
  // not kept; their bytes stay in the old segment's copy (quarantine, or
  // its .deleted file).
  // Each split segment holds one run of the old file, in file order.
  int64_t from_position = 0;
  for (auto it = fresh.begin(); it != fresh.end();) {
    LogSegment* below = it->get();
    const int64_t position = from_position;
    from_position += below->size();
    if (below->base_offset() >= old_base) {
      ++it;
      continue;
    }
    const std::string why = fmt::format(
        "{}: the offset-overflow split of segment {} found a batch at offset {} (position {}), "
        "below the segment's base offset: not kept ({} bytes; baseOffset is outside the batch "
        "CRC)",
        segment->log_path(), old_base, below->base_offset(), position, below->size());
    report_->not_kept.push_back({segment->log_path(), position, below->size(), below->base_offset(),
                                 std::nullopt, DamageKind::kOffsetOutsideSegment, why, ""});
    Warn(DamageKind::kOffsetOutsideSegment, why);
    DARUMA_RETURN_IF_ERROR(below->Close());
    DARUMA_RETURN_IF_ERROR(below->DeleteFiles());
    it = fresh.erase(it);
  }
  for (auto it = fresh.rbegin(); it != fresh.rend(); ++it) {
    DARUMA_RETURN_IF_ERROR(
        (*it)->ChangeFileSuffixes(std::string(kCleanedFileSuffix), std::string(kSwapFileSuffix)));
  }
  DARUMA_RETURN_IF_ERROR(segment->Close());
  const std::vector<std::string> old_files = {segment->log_path(), segment->offset_index_path(),
                                              segment->time_index_path(),
                                              segment->txn_index_path()};
  if (quarantine_.enabled()) {
    for (const std::string& path : old_files) {
      DARUMA_RETURN_IF_ERROR(
          DeleteFile(path, {DamageKind::kOffsetOverflow, old_base, std::nullopt,
                            "segment replaced by its offset-overflow split (§10.5)"}));
    }
  } else {
    for (const std::string& path : old_files) {
      if (!fs_->Exists(path)) continue;
      report_->deleted_files.push_back(path);
      report_->damage.push_back(
          {DamageKind::kOffsetOverflow,
           fmt::format("{}: deleted: segment replaced by its offset-overflow split", path)});
    }
    DARUMA_RETURN_IF_ERROR(segment->ChangeFileSuffixes("", std::string(kDeletedFileSuffix)));
  }
  bool replaced_at_same_base = false;
  for (auto& s : fresh) {
    DARUMA_RETURN_IF_ERROR(s->ChangeFileSuffixes(std::string(kSwapFileSuffix), ""));
    replaced_at_same_base = replaced_at_same_base || s->base_offset() == old_base;
  }
  DARUMA_RETURN_IF_ERROR(fs_->SyncDir(dir_));
  if (!replaced_at_same_base && fs_->Exists(psm_->SnapshotPath(old_base))) {
    DARUMA_ASSIGN_OR_RETURN(auto marked, psm_->RemoveAndMarkSnapshotForDeletion(old_base));
    if (marked) report_->deleted_files.push_back(*marked);
  }
  std::string bases;
  for (auto& s : fresh) bases += (bases.empty() ? "" : ", ") + std::to_string(s->base_offset());
  Warn(fmt::format("Replaced overflowed segment {} with split segments [{}]", old_base, bases));
  split_ = SplitResult{old_base, std::move(fresh)};
  return Status::Ok();
}

// Beyond Kafka: Kafka's split reads every entry of the segment, also past a
// corrupt one, and fails the whole load on an entry it cannot read (a wrapper
// that does not decompress, a batch whose offsets wrap, a torn tail: a crash
// while a pre-2.0 overflowed segment was written). Recovery of the split
// segments would cut every byte from the first invalid entry on anyway, so
// when the split fails for any reason but I/O, such an entry exists, and the
// overflow before it is corroborated (FindUnsplittableTail), those bytes are
// set aside and cut first, and the split is tried once more. An overflow seen
// in one batch only may be a damaged baseOffset; the load is refused then, as
// Kafka's is. Where Kafka's split succeeds, this path is not taken.
Result<std::vector<std::unique_ptr<LogSegment>>> Loader::SplitCuttingUnsplittableTail(
    LogSegment* segment) {
  auto fresh = SplitOverflowedSegment(fs_, segment, p_.config, p_.clock);
  if (fresh.ok() || fresh.status().code() == StatusCode::kIoError) return fresh;
  DARUMA_ASSIGN_OR_RETURN(std::optional<UnsplittableTail> tail, FindUnsplittableTail(*segment));
  if (!tail || !tail->overflow_corroborated) return fresh;
  const int64_t size = segment->size();
  const std::string why = fmt::format(
      "{}; the offset-overflow split cannot copy the {} bytes from position {} (it failed with: "
      "{}): cut there, as recovery of the split segments would cut them",
      tail->reason, size - tail->position, tail->position, fresh.status().message());
  if (quarantine_.enabled()) {
    DARUMA_RETURN_IF_ERROR(quarantine_.CopyRange(segment->log_path(), tail->position, size,
                                                 {tail->kind, std::nullopt, std::nullopt, why}));
  }
  DARUMA_ASSIGN_OR_RETURN(int64_t cut, segment->TruncateDamagedTail(tail->position));
  report_->truncated_bytes += cut;
  Warn(tail->kind, why);
  return SplitOverflowedSegment(fs_, segment, p_.config, p_.clock);
}

Status Loader::LoadSegmentFilesRetryingSplits() {
  for (;;) {
    // Pass 4 recovers, one after another, the segments with a missing index
    // below the ones pass 5 recovers: like pass 5 it retires the snapshots
    // above each. What is left retired stays for pass 5 to keep (the
    // snapshot at the log end, say), which deletes the rest when it ends;
    // without a pass 5, or after an error, it is deleted now.
    retire_snapshots_ = true;
    Status st = LoadSegmentFiles();
    if (!st.ok() || p_.had_clean_shutdown || HasSuffix(dir_, kDeletedDirSuffix)) {
      Status purged = StopRetiringSnapshots();
      if (st.ok()) st = purged;
    }
    if (st.ok() || !split_) return st;
    // Kafka: close and forget every segment, then load the files again (the
    // split segments now have indexes of their own).
    for (auto& s : split_->segments) DARUMA_RETURN_IF_ERROR(s->Close());
    split_.reset();
    for (auto& [base, segment] : segments_) DARUMA_RETURN_IF_ERROR(segment->Close());
    segments_.clear();
    deferred_.clear();
  }
}

// Kafka's fallback after an invalid-offset or I/O error in recovery:
// segment.truncateTo(baseOffset), normally dropping the whole segment.
Result<int64_t> Loader::TruncateWholeSegment(LogSegment* segment) {
  const int64_t base = segment->base_offset();
  if (quarantine_.enabled()) {
    DARUMA_ASSIGN_OR_RETURN(auto found, segment->TranslateOffset(base, 0));
    if (found) {
      DARUMA_RETURN_IF_ERROR(quarantine_.CopyRange(
          segment->log_path(), found->position, segment->size(),
          {DamageKind::kNonMonotonicOffset, base, std::nullopt,
           "invalid offsets during recovery: segment truncated to its base"}));
    }
  }
  DARUMA_ASSIGN_OR_RETURN(int64_t truncated, segment->TruncateTo(base));
  DARUMA_RETURN_IF_ERROR(KeepAbortedTxns(segment));
  return truncated;
}

// (producer id, offset) of every ABORT marker in `segment`'s .log.
Result<std::set<std::pair<int64_t, int64_t>>> AbortMarkers(LogSegment* segment) {
  std::set<std::pair<int64_t, int64_t>> out;
  FileBatchReader reader(segment->log_file());
  while (std::optional<LogEntry> entry = reader.Next()) {
    if (!entry->is_v2()) continue;  // no transactions before magic 2
    RecordBatchView batch = entry->batch();
    if (!batch.is_control() || batch.records_count() == 0) continue;
    if (FirstControlRecordType(batch) == ControlRecordType::kAbort) {
      out.insert({batch.producer_id(), batch.base_offset()});
    }
  }
  DARUMA_RETURN_IF_ERROR(reader.ScanStatus());
  return out;
}

Status Loader::RememberTxnIndex(LogSegment* segment) {
  old_txn_index_.reset();
  TransactionIndex* index = segment->txn_index();
  if (!index->FileExists()) return Status::Ok();
  DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, fs_->ReadFile(index->path()));
  if (bytes.empty()) return Status::Ok();
  OldTxnIndex old{segment->base_offset(), std::move(bytes), {}};
  auto entries = index->AllAbortedTxns();
  if (entries.ok()) old.entries = std::move(*entries);
  old_txn_index_ = std::move(old);
  return Status::Ok();
}

Status Loader::KeepAbortedTxns(LogSegment* segment) {
  if (!old_txn_index_ || old_txn_index_->base != segment->base_offset()) return Status::Ok();
  const OldTxnIndex old = std::move(*old_txn_index_);
  old_txn_index_.reset();
  TransactionIndex* index = segment->txn_index();
  DARUMA_ASSIGN_OR_RETURN(std::vector<AbortedTxn> now, index->AllAbortedTxns());
  // The usual case after a crash: the rebuild found what the file held. The
  // merge below then keeps, drops and quarantines nothing; with short
  // transactions its map of every entry was 2 % of a recovery.
  if (now == old.entries && now.size() * AbortedTxn::kSize == old.bytes.size()) {
    return Status::Ok();
  }
  DARUMA_ASSIGN_OR_RETURN(int64_t next, segment->ReadNextOffset());
  std::map<int64_t, AbortedTxn> merged;  // by marker offset
  for (const AbortedTxn& t : now) merged[t.last_offset] = t;
  std::vector<AbortedTxn> candidates;  // old entries the rebuild lacks
  int64_t kept = 0, dropped = 0;
  for (const AbortedTxn& t : old.entries) {
    auto it = merged.find(t.last_offset);
    if (it != merged.end()) {
      if (it->second.producer_id != t.producer_id) ++dropped;  // the .log says otherwise
    } else if (t.last_offset < next) {
      candidates.push_back(t);
    } else {
      ++dropped;  // its marker went with the .log range cut off
    }
  }
  if (!candidates.empty()) {
    // Kept only if the segment really holds that producer's ABORT marker at
    // the entry's last offset: a damaged .txnindex (zeros, say) has
    // entries that look valid but name no marker.
    using Markers = std::set<std::pair<int64_t, int64_t>>;
    DARUMA_ASSIGN_OR_RETURN(Markers aborts, AbortMarkers(segment));
    for (const AbortedTxn& t : candidates) {
      if (t.first_offset <= t.last_offset && aborts.count({t.producer_id, t.last_offset})) {
        merged[t.last_offset] = t;
        ++kept;
      } else {
        ++dropped;
      }
    }
  }
  const bool shortened =
      dropped > 0 || kept > 0 || now.size() * AbortedTxn::kSize < old.bytes.size();
  if (!shortened) return Status::Ok();
  const std::string path = index->path();
  if (dropped == 0 && merged.size() == old.entries.size() &&
      merged.size() * AbortedTxn::kSize == old.bytes.size() &&
      std::equal(merged.begin(), merged.end(), old.entries.begin(),
                 [](const auto& m, const AbortedTxn& t) { return m.second == t; })) {
    // The old index was exactly right: its extra entries name ABORT markers
    // whose transactions began in a range an earlier recovery cut (and
    // reported then). Written back as it was, with nothing to quarantine or
    // report, so that recovering the same files again changes nothing.
    DARUMA_RETURN_IF_ERROR(index->Reset());
    for (const auto& [last, t] : merged) DARUMA_RETURN_IF_ERROR(index->Append(t));
    return index->Flush();
  }
  DARUMA_RETURN_IF_ERROR(quarantine_.SaveBytes(
      path, old.bytes,
      {DamageKind::kCorruptIndex,
       old.entries.empty() ? std::nullopt : std::optional<int64_t>(old.entries.front().last_offset),
       old.entries.empty() ? std::nullopt : std::optional<int64_t>(old.entries.back().last_offset),
       fmt::format(
           ".txnindex before recovery rebuilt it ({} entries; {} dropped with the log range "
           "they describe or contradicted by it, {} kept that the rebuild did not find)",
           old.entries.size(), dropped, kept)}));
  if (kept == 0) return Status::Ok();
  Warn(
      fmt::format("Kept {} aborted transaction(s) of {} that rebuilding it from the log did not "
                  "find (their markers are still in the segment)",
                  kept, path));
  DARUMA_RETURN_IF_ERROR(index->Reset());
  for (const auto& [last, t] : merged) DARUMA_RETURN_IF_ERROR(index->Append(t));
  return index->Flush();
}

Status Loader::RemoveAndDeleteSegments(const std::vector<int64_t>& bases, DamageKind kind,
                                       const std::string& reason) {
  ListingIsStale();
  snapshots_changed_ = true;
  for (int64_t base : bases) {
    auto it = segments_.find(base);
    if (it == segments_.end()) continue;
    std::unique_ptr<LogSegment> segment = std::move(it->second);
    segments_.erase(it);
    DARUMA_RETURN_IF_ERROR(segment->Close());
    if (quarantine_.enabled()) {
      for (const std::string& path :
           {LogFileName(dir_, base), OffsetIndexFileName(dir_, base), TimeIndexFileName(dir_, base),
            TxnIndexFileName(dir_, base)}) {
        DARUMA_RETURN_IF_ERROR(DeleteFile(path, {kind, base, std::nullopt, reason}));
      }
    } else {
      // Kafka renames to .deleted and deletes after file.delete.delay.ms; a
      // later load's pass 1 removes what is left.
      for (const std::string& path :
           {LogFileName(dir_, base), OffsetIndexFileName(dir_, base), TimeIndexFileName(dir_, base),
            TxnIndexFileName(dir_, base)}) {
        if (!fs_->Exists(path)) continue;
        report_->deleted_files.push_back(path);
        report_->damage.push_back({kind, fmt::format("{}: deleted: {}", path, reason)});
      }
      DARUMA_RETURN_IF_ERROR(segment->ChangeFileSuffixes("", std::string(kDeletedFileSuffix)));
    }
    // Their producer snapshots go too (Kafka: rename to .snapshot.deleted).
    // A temporary manager of pass 5 may already have deleted the file.
    if (!fs_->Exists(psm_->SnapshotPath(base))) continue;
    DARUMA_ASSIGN_OR_RETURN(auto marked, psm_->RemoveAndMarkSnapshotForDeletion(base));
    if (marked) {
      // A snapshot is derived state (rebuilt from the segments), so it is
      // never quarantined.
      report_->deleted_files.push_back(*marked);
      if (quarantine_.enabled()) DARUMA_RETURN_IF_ERROR(fs_->Remove(*marked));
    }
  }
  return fs_->SyncDir(dir_);
}

// The base of the segment holding the recovery point (the first segment if
// none), where pass 5 starts.
int64_t Loader::FirstUnflushedBase() const {
  auto it = segments_.upper_bound(p_.recovery_point_checkpoint);
  if (it != segments_.begin()) --it;
  return it->first;
}

// Pass 5 step 1 over the segments from `from` on. Returns where to start
// again after an offset-overflow split (Kafka retries the whole pass; the
// segments before the split are unchanged, so recovering them again would
// give the same files), or nullopt when done.
Result<std::optional<int64_t>> Loader::RecoverSegmentsFrom(int64_t from) {
  std::vector<int64_t> unflushed;
  std::vector<const LogSegment*> to_scan;
  for (auto it = segments_.lower_bound(from); it != segments_.end(); ++it) {
    unflushed.push_back(it->first);
    to_scan.push_back(it->second.get());
  }
  SetRemaining(int64_t(unflushed.size()));
  // With spare threads, each recovered segment's fsyncs run in the background
  // (background_syncs.h) and are all waited for before this returns; with
  // one thread they run here, in order. Every return below waits for them
  // (Wait, or the destructor on errors) before segments_ can change again.
  BackgroundSyncs syncs(p_.recovery_threads > 1 ? kMaxSyncsInFlight : 0);
  // Scans run ahead on the pool; this thread applies them in order and is
  // the only one that modifies segments.
  SegmentScanPipeline pipeline(to_scan, p_.recovery_threads, p_.scan_help);
  // Each segment's recovery deletes the snapshots above it and the next
  // ones write them again: retired instead, they are kept where the bytes
  // agree, while segments recover whole (StopRetiringUnlessWhole).
  retire_snapshots_ = true;
  for (size_t i = 0; i < unflushed.size(); ++i) {
    LogSegment* segment = segments_.at(unflushed[i]).get();
    const bool deferred = deferred_.count(segment->base_offset()) > 0;
    const SegmentRecoveryScan scan = pipeline.Take(i);
    std::unique_ptr<ProducerStateManager> snapshot_owner;
    auto truncated = RecoverSegment(segment, &scan, &snapshot_owner);
    DARUMA_RETURN_IF_ERROR(StopRetiringUnlessWhole(truncated));
    if (!truncated.ok() && split_) {
      pipeline.Stop();
      DARUMA_RETURN_IF_ERROR(syncs.Wait());
      auto old = segments_.find(split_->old_base);
      if (old != segments_.end()) segments_.erase(old);
      deferred_.erase(split_->old_base);
      // The split's segments come in file order, which is not offset order
      // when a batch's baseOffset (outside the CRC) went backwards: Kafka
      // starts a new segment there too, below the first one. Recovery goes
      // on from the lowest, or that segment would be kept unvalidated.
      int64_t lowest_new = split_->segments.front()->base_offset();
      for (auto& s : split_->segments) {
        lowest_new = std::min(lowest_new, s->base_offset());
        segments_[s->base_offset()] = std::move(s);
      }
      split_.reset();
      return std::optional<int64_t>(std::max(FirstUnflushedBase(), lowest_new));
    }
    if (deferred) {
      // Kafka recovered this segment in pass 4, where any error aborts the
      // load and a truncation is not "corruption" to pass 5 (its second scan
      // finds the segment already cut): later segments stay.
      if (!truncated.ok()) return truncated.status();
      report_->truncated_bytes += *truncated;
      DARUMA_RETURN_IF_ERROR(SyncRecoveredSegment(segment, std::move(snapshot_owner), &syncs));
      SetRemaining(int64_t(unflushed.size() - i - 1));
      continue;
    }
    if (!truncated.ok()) {
      // Spec §10.3 pass 5: an invalid offset or an I/O error reading the
      // segment cuts it. Not a refused permission or a lack of descriptors:
      // those say nothing of the bytes, which stay for the next start.
      const Status& st = truncated.status();
      const bool cut = st.code() == StatusCode::kInvalidOffset || IsStorageIoError(st);
      if (!cut) return st;
      Warn(DamageKind::kNonMonotonicOffset,
           fmt::format("Found invalid offset during recovery. Deleting the corrupt segment and "
                       "creating an empty one with starting offset {} ({})",
                       segment->base_offset(), truncated.status().message()));
      truncated = TruncateWholeSegment(segment);
      if (!truncated.ok()) return truncated.status();
    }
    if (*truncated > 0) {
      // Later segments are discarded unread: their scans (and indexes) are
      // dropped before their files move.
      pipeline.Stop();
      DARUMA_ASSIGN_OR_RETURN(int64_t next, NextOffsetOf(segment));
      Warn(last_stop_kind_, fmt::format("Corruption found in segment {}, truncating to offset {}",
                                        segment->base_offset(), next));
      report_->truncated_bytes += *truncated;
      std::vector<int64_t> rest(unflushed.begin() + int64_t(i) + 1, unflushed.end());
      DARUMA_RETURN_IF_ERROR(
          RemoveAndDeleteSegments(rest, DamageKind::kAfterDamage,
                                  fmt::format("segment after the corruption in segment {} (pass 5)",
                                              segment->base_offset())));
      DARUMA_RETURN_IF_ERROR(SyncRecoveredSegment(segment, std::move(snapshot_owner), &syncs));
      SetRemaining(0);
      break;
    }
    DARUMA_RETURN_IF_ERROR(SyncRecoveredSegment(segment, std::move(snapshot_owner), &syncs));
    SetRemaining(int64_t(unflushed.size() - i - 1));
  }
  DARUMA_RETURN_IF_ERROR(StopRetiringSnapshots());
  DARUMA_RETURN_IF_ERROR(syncs.Wait());
  return std::optional<int64_t>();
}

// Pass 5 (§10.3).
Result<Loader::RecoveryOffsets> Loader::RecoverLog() {
  if (!p_.had_clean_shutdown && !segments_.empty()) {
    std::optional<int64_t> from = FirstUnflushedBase();
    while (from) {
      DARUMA_ASSIGN_OR_RETURN(from, RecoverSegmentsFrom(*from));
    }
  }
  // Pass 4's retired snapshots, when pass 5 had no segment to recover.
  DARUMA_RETURN_IF_ERROR(StopRetiringSnapshots());

  // A clean start reads the active segment's tail once: for its log end
  // offset and to find it damaged.
  std::optional<int64_t> whole_tail_leo;
  if (p_.had_clean_shutdown && !segments_.empty()) {
    DARUMA_ASSIGN_OR_RETURN(whole_tail_leo, RecoverDamagedActiveTail());
  }

  std::optional<int64_t> valid_leo;
  if (!segments_.empty()) {
    int64_t leo = 0;
    if (whole_tail_leo) {
      leo = *whole_tail_leo;
    } else {
      DARUMA_ASSIGN_OR_RETURN(leo, NextOffsetOf(segments_.rbegin()->second.get()));
    }
    if (leo >= p_.log_start_offset_checkpoint) {
      valid_leo = leo;
    } else {
      Warn(DamageKind::kCorruptCheckpoint,
           fmt::format("Deleting all segments because logEndOffset ({}) is smaller than "
                       "logStartOffset {}. This could happen if segment files were deleted "
                       "from the file system.",
                       leo, p_.log_start_offset_checkpoint));
      std::vector<int64_t> all;
      for (const auto& [base, segment] : segments_) all.push_back(base);
      DARUMA_RETURN_IF_ERROR(RemoveAndDeleteSegments(all, DamageKind::kCorruptCheckpoint,
                                                     "log end below the log start offset"));
      DARUMA_RETURN_IF_ERROR(epochs_->ClearAndFlush());
      snapshots_changed_ = true;
      DARUMA_RETURN_IF_ERROR(psm_->TruncateFullyAndStartAt(p_.log_start_offset_checkpoint));
    }
  }
  if (segments_.empty()) {
    ListingIsStale();
    DARUMA_ASSIGN_OR_RETURN(
        auto segment,
        LogSegment::Open(fs_, dir_, p_.log_start_offset_checkpoint, p_.config, false));
    segments_[p_.log_start_offset_checkpoint] = std::move(segment);
  }
  if (p_.had_clean_shutdown && valid_leo) return RecoveryOffsets{*valid_leo, *valid_leo};
  int64_t leo = 0;
  if (valid_leo) {
    leo = *valid_leo;
  } else {
    DARUMA_ASSIGN_OR_RETURN(leo, segments_.rbegin()->second->ReadNextOffset());
  }
  return RecoveryOffsets{std::min(p_.recovery_point_checkpoint, leo), leo};
}

// A clean shutdown left the active segment whole; a tail that is not
// (partition_dir_heal.h) is recovered as after a crash, and the producer
// state is then rebuilt as after a crash too (its snapshot predates the cut).
Result<std::optional<int64_t>> Loader::RecoverDamagedActiveTail() {
  LogSegment* active = segments_.rbegin()->second.get();
  ReportedDamage why{DamageKind::kTornTail, ""};
  DARUMA_ASSIGN_OR_RETURN(std::optional<int64_t> leo, ReadNextOffsetOfWholeTail(active, &why));
  if (leo) {
    // A clean shutdown writes the producer snapshot at the log end offset;
    // one above the tail's end means the tail lost batches or a baseOffset
    // (outside the CRC) was damaged there.
    const std::optional<int64_t> snapshot = psm_->LatestSnapshotOffset();
    if (!snapshot || *snapshot <= *leo) return leo;
    why = {DamageKind::kLostRecords,
           fmt::format("{}: its batches end at offset {}, but the producer snapshot of the clean "
                       "shutdown is at offset {}",
                       active->log_path(), *leo - 1, *snapshot)};
  }
  Warn(why.kind,
       fmt::format("clean shutdown, but the active segment's tail is damaged ({}): the segment "
                   "is recovered as after a crash",
                   why.text));
  clean_tail_recovered_ = true;
  snapshots_changed_ = true;
  ListingIsStale();
  DARUMA_RETURN_IF_ERROR(RecoverSegment(active).status());
  return std::optional<int64_t>();
}

Status Loader::OpenLeaderEpochCache() {
  const std::string path = JoinPath(dir_, kLeaderEpochCheckpointFileName);
  Result<LeaderEpochFileCache> cache = LeaderEpochFileCache::Open(path, fs_, &epochs_file_missing_);
  // Kafka and Daruma both create the file with a partition's first segment,
  // so one missing beside data (a dir copied without it) leaves the epochs
  // the batches carry unknown: they are rebuilt from the batches, or the
  // next append would be stamped with epoch 0 after batches of a higher one.
  if (epochs_file_missing_) rebuild_epochs_ = true;
  if (!cache.ok() && cache.status().IsCorruption()) {
    Warn(DamageKind::kCorruptCheckpoint,
         fmt::format("{}; the file goes to quarantine and the leader epochs are rebuilt from "
                     "the batches",
                     cache.status().message()));
    DARUMA_RETURN_IF_ERROR(
        DeleteFile(path, {DamageKind::kCorruptCheckpoint, std::nullopt, std::nullopt,
                          fmt::format("{} (the leader epochs are rebuilt from the batches)",
                                      cache.status().message())}));
    rebuild_epochs_ = true;
    cache = LeaderEpochFileCache::Open(path, fs_);
  }
  if (!cache.ok()) return cache.status();
  epochs_ = std::make_unique<LeaderEpochFileCache>(std::move(*cache));
  return Status::Ok();
}

// After pass 4, before pass 5: the segments below the first one pass 5
// recovers (all after a clean shutdown) give their epochs here, in offset
// order; pass 5 assigns the epochs of what it recovers, as always.
Status Loader::RebuildEpochsIfNeeded() {
  if (!rebuild_epochs_) return Status::Ok();
  std::optional<int64_t> below;
  if (!p_.had_clean_shutdown) {
    below = p_.recovery_point_checkpoint;
    auto it = segments_.upper_bound(p_.recovery_point_checkpoint);
    if (it != segments_.begin()) below = std::prev(it)->first;
  }
  int64_t scanned = 0;
  Status st = RebuildLeaderEpochs(segments_, below, epochs_.get(), &scanned);
  AddScanned(scanned);
  if (st.ok() && epochs_file_missing_ && !epochs_->entries().empty()) {
    Warn(fmt::format("{} was missing: {} leader epoch(s) rebuilt from the batches, the latest {}",
                     JoinPath(dir_, kLeaderEpochCheckpointFileName), epochs_->entries().size(),
                     epochs_->entries().back().first));
  }
  return st;
}

Result<std::unique_ptr<Log>> Loader::Run() {
  const int64_t start_ns = p_.clock->NowNanos();
  // A dir the caller listed exists; only an unlisted one is checked.
  if (given_listing_ == nullptr && !fs_->Exists(dir_)) {
    DARUMA_RETURN_IF_ERROR(fs_->CreateDir(dir_));
  }
  DARUMA_RETURN_IF_ERROR(OpenLeaderEpochCache());
  DARUMA_ASSIGN_OR_RETURN(const std::vector<std::string>* names, CurrentListing());
  DARUMA_ASSIGN_OR_RETURN(psm_,
                          ProducerStateManager::Open(p_.tp.ToString(), dir_, fs_,
                                                     p_.config.producer_id_expiration_ms, names));
  QuarantineCorruptSnapshotsOf(psm_.get());
  latest_snapshot_found_ = psm_->LatestSnapshotOffset();

  DARUMA_ASSIGN_OR_RETURN(std::vector<std::string> swaps, RemoveTempFilesAndCollectSwaps());
  DARUMA_RETURN_IF_ERROR(CompleteInterruptedSwaps(swaps));
  DARUMA_RETURN_IF_ERROR(LoadSegmentFilesRetryingSplits());
  DARUMA_RETURN_IF_ERROR(RebuildEpochsIfNeeded());

  RecoveryOffsets offsets;
  if (!HasSuffix(dir_, kDeletedDirSuffix)) {
    DARUMA_ASSIGN_OR_RETURN(offsets, RecoverLog());
  } else if (segments_.empty()) {
    DARUMA_ASSIGN_OR_RETURN(auto segment, LogSegment::Open(fs_, dir_, 0, p_.config, false));
    segments_[0] = std::move(segment);
  }

  // Pass 6. Kafka flushes these truncations asynchronously; flushing now gives
  // the same file a moment earlier. An entry at the recovered end is routine
  // (a leader that wrote nothing since its election); one above it names
  // records that are gone, and nothing left can rebuild it: then the file
  // as it was goes to quarantine.
  // The entries ascend, so the latest says; the file is read only then:
  // every load of every partition comes here.
  const std::optional<EpochEntry> latest_epoch = epochs_->LatestEntry();
  const bool dropped_above_end = latest_epoch && latest_epoch->second > offsets.next_offset;
  std::vector<EpochEntry> entries_before;
  std::optional<std::vector<uint8_t>> epochs_before;
  if (dropped_above_end && quarantine_.enabled() && !epochs_file_missing_) {
    entries_before = epochs_->entries();
    Result<std::vector<uint8_t>> read = fs_->ReadFile(epochs_->path());
    if (read.ok()) epochs_before = std::move(*read);
  }
  epochs_->TruncateFromEnd(offsets.next_offset);
  const int64_t log_start = std::max(p_.log_start_offset_checkpoint, segments_.begin()->first);
  epochs_->TruncateFromStart(p_.log_start_offset_checkpoint);
  if (epochs_->dirty()) DARUMA_RETURN_IF_ERROR(epochs_->Flush());
  if (dropped_above_end && epochs_before) {
    std::string dropped;
    for (const EpochEntry& e : entries_before) {
      if (e.second >= offsets.next_offset) {
        dropped += fmt::format("{}epoch {} from offset {}", dropped.empty() ? "" : ", ", e.first,
                               e.second);
      }
    }
    DARUMA_RETURN_IF_ERROR(quarantine_.SaveBytes(
        epochs_->path(), *epochs_before,
        {DamageKind::kLostRecords, offsets.next_offset, std::nullopt,
         fmt::format("leader-epoch-checkpoint as found: its entries at or above the recovered "
                     "log end offset {} ({}) were dropped, as Kafka drops them, and records "
                     "above it are gone",
                     offsets.next_offset, dropped)}));
  }

  std::vector<int64_t> bases;
  for (const auto& [base, segment] : segments_) bases.push_back(base);
  // Snapshots at no segment base are the ones Kafka's removeStraySnapshots
  // may delete; each one it did (not among the manager's snapshots after it)
  // is reported (deletedFiles). listing_ holds the snapshot names while
  // snapshots_changed_ is clear; else the dir is listed once, here, for both.
  std::vector<std::string> fresh;
  if (snapshots_changed_) {
    DARUMA_ASSIGN_OR_RETURN(fresh, RegularFileNames());
  }
  const std::vector<std::string>& listed = snapshots_changed_ ? fresh : listing_;
  std::map<int64_t, std::string> stray_snapshots;  // offset -> path
  for (const std::string& name : listed) {
    if (!HasSuffix(name, kProducerSnapshotFileSuffix)) continue;
    Result<int64_t> offset = OffsetFromFileName(name);
    if (offset.ok() && !std::binary_search(bases.begin(), bases.end(), *offset)) {
      stray_snapshots.emplace(*offset, PathOf(name));
    }
  }
  DARUMA_RETURN_IF_ERROR(psm_->RemoveStraySnapshots(bases, &listed));
  if (!stray_snapshots.empty()) {
    const std::vector<int64_t> kept = psm_->SnapshotOffsets();
    for (const auto& [offset, path] : stray_snapshots) {
      if (!std::binary_search(kept.begin(), kept.end(), offset)) {
        report_->deleted_files.push_back(path);
        report_->damage.push_back(
            {DamageKind::kStraySnapshot,
             fmt::format("{}: deleted: a producer snapshot outside the log's segments (Kafka "
                         "deletes it and rebuilds the state from the log)",
                         path)});
      }
    }
  }
  // A producer snapshot is written at the log end offset of its time, so one
  // above the recovered end proves records [end, snapshot) once existed.
  // Kafka drops it silently (truncateAndReload); the loss is reported: a tail
  // the crash lost before it was flushed, or a damaged segment.
  if (const std::optional<int64_t> latest = latest_snapshot_found_;
      latest && *latest > offsets.next_offset && !HasSuffix(dir_, kDeletedDirSuffix)) {
    Warn(DamageKind::kLostRecords,
         fmt::format("{}: a producer snapshot at offset {} was above the recovered log end offset "
                     "{}: the records from {} to {} were in the log before and are gone",
                     psm_->SnapshotPath(*latest), *latest, offsets.next_offset, offsets.next_offset,
                     *latest - 1));
  }
  // The snapshots above the recovered end went with the truncations
  // (Kafka's truncateAndReload) or go with the rebuild below; they are the
  // last record of those producers, so a copy stays.
  if (quarantine_.enabled() && !HasSuffix(dir_, kDeletedDirSuffix)) {
    for (int64_t offset : psm_->SnapshotOffsets()) {
      const std::string path = psm_->SnapshotPath(offset);
      if (offset <= offsets.next_offset || removed_snapshots_.count(offset) > 0 ||
          quarantined_snapshots_.count(path) > 0) {
        continue;
      }
      Result<std::vector<uint8_t>> bytes = fs_->ReadFile(path);
      if (bytes.ok()) removed_snapshots_[offset] = {path, std::move(*bytes)};
    }
    for (const auto& [offset, removed] : removed_snapshots_) {
      if (offset <= offsets.next_offset) continue;
      DARUMA_RETURN_IF_ERROR(quarantine_.SaveBytes(
          removed.first, removed.second,
          {DamageKind::kLostRecords, offsets.next_offset, offset - 1,
           fmt::format("producer snapshot above the recovered log end offset {}",
                       offsets.next_offset)}));
    }
  }
  int64_t scanned = 0;
  DARUMA_RETURN_IF_ERROR(
      RebuildProducerState(psm_.get(), segments_,
                           {log_start, offsets.next_offset,
                            p_.had_clean_shutdown && !clean_tail_recovered_, p_.clock->NowMs()},
                           &scanned));
  AddScanned(scanned);

  // The active segment's indexes get their full size back. Nothing after
  // this fails, so on a load that changed nothing else (a clean start) the
  // resize needs no undo record (and no fsync). A load that left indexes
  // deferred (IndexFile) changed nothing yet but may still create their
  // files under this transaction (LoadLog, LogDirLoader): it keeps
  // recording, so that they are rolled back or synced with the rest.
  const bool deferred_indexes =
      std::any_of(segments_.begin(), segments_.end(),
                  [](const auto& entry) { return entry.second->has_deferred_index_files(); });
  if (!HasSuffix(dir_, kDeletedDirSuffix)) {
    if (p_.transaction && !deferred_indexes) p_.transaction->StopRecordingIfUnchanged();
    DARUMA_RETURN_IF_ERROR(
        segments_.rbegin()->second->ResizeIndexes(p_.config.segment_index_bytes));
  }

  LoadedLogParts parts;
  parts.file_system_owner = p_.transaction;
  parts.segments = std::move(segments_);
  parts.log_start_offset = log_start;
  parts.recovery_point = offsets.recovery_point;
  parts.log_end_offset = offsets.next_offset;
  psm_->set_corrupt_snapshot_hook(nullptr);  // the quarantine is this load's
  psm_->set_removal_hook(nullptr);
  parts.producer_state = std::move(psm_);
  parts.leader_epoch_cache = std::move(epochs_);
  DARUMA_ASSIGN_OR_RETURN(auto log,
                          Log::FromLoaded(fs_, dir_, p_.tp, p_.config, p_.clock, std::move(parts)));

  PartitionRecoveryReport& r = *report_;
  r.topic = p_.tp.topic;
  r.partition = p_.tp.partition;
  r.dir = dir_;
  r.log_start_offset = log->log_start_offset();
  r.log_end_offset = log->log_end_offset();
  r.high_watermark = log->high_watermark();
  r.recovery_point = log->recovery_point();
  r.loaded_recovery_point = r.recovery_point;
  // The LSO once the high watermark reaches the log end (the caller may
  // recompute it after clamping the replication checkpoint in).
  r.last_stable_offset = log->first_unstable_offset().value_or(r.log_end_offset);
  r.segments.clear();
  for (LogSegment* s : log->segments_for_inspection()) {
    r.segments.push_back({s->base_offset(), s->size()});
  }
  r.leader_epochs.clear();
  for (const EpochEntry& e : log->leader_epochs()) r.leader_epochs.push_back({e.first, e.second});
  r.aborted_transactions.clear();
  for (const AbortedTxn& t : log->AllAbortedTransactions()) {
    r.aborted_transactions.push_back(
        {t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset});
  }
  r.active_producers = int64_t(log->active_producer_count());
  r.duration_ms = (p_.clock->NowNanos() - start_ns) / 1000000;
  return log;
}

}  // namespace

Result<std::unique_ptr<Log>> LoadLog(const LoadLogParams& params, PartitionRecoveryReport* report) {
  PartitionRecoveryReport local;
  if (report == nullptr) report = &local;
  LoadLogParams p = params;
  if (p.fs == nullptr) p.fs = FileSystem::Default();
  if (p.clock == nullptr) p.clock = Clock::System();
  const bool own_transaction = p.transactional && !p.transaction;
  if (!p.transaction) {
    // A load or repair that a crash interrupted is undone before anything
    // else reads the dir.
    DARUMA_RETURN_IF_ERROR(p.pack_rolled_back || p.log_dir.empty()
                               ? LoadTransaction::RollBackInterrupted(p.fs, p.partition_dir, report)
                               : LoadTransaction::RollBackInterruptedWithPack(
                                     p.fs, p.log_dir, p.partition_dir, report));
  }
  if (own_transaction) p.transaction = LoadTransaction::Begin(p.fs, p.partition_dir);
  if (p.transaction) p.fs = p.transaction->fs();

  std::unique_ptr<Log> log;
  Status st;
  {
    // The loader and everything it opened are gone before a rollback, so no
    // destructor writes to a restored file.
    Loader loader(p, report);
    Result<std::unique_ptr<Log>> loaded = loader.Run();
    if (!own_transaction) return loaded;
    if (loaded.ok()) {
      log = std::move(*loaded);
    } else {
      st = loaded.status();
    }
  }
  // Commit syncs what the load changed before the undo log goes; the log's
  // recovery point stays Kafka's (the caller's FlushAll moves it). The
  // indexes the load left deferred are created first, so that the undo log
  // records them and Commit syncs them: the recovery point found on disk
  // lies above their segments, and a crash must not leave one of them
  // there empty or half written.
  if (st.ok()) st = log->CreateDeferredIndexFiles();
  if (st.ok()) st = p.transaction->Commit();
  if (st.ok()) return log;
  if (log) (void)log->Close();
  log.reset();  // before the files are restored
  return p.transaction->RollbackAfter(st, report);
}

}  // namespace daruma
