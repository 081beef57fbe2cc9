#include "recovery/log_dir_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "common/allocator_tuning.h"
#include "log/log_file_names.h"
#include "recovery/clean_shutdown_marker_rule.h"
#include "recovery/load_undo_pack.h"
#include "recovery/log_loader.h"
#include "recovery/run_threads.h"

namespace daruma {

namespace {

// A loaded partition keeps ~14 KiB of small objects (a clean one with 4
// segments, as measured with heaptrack), and a presaved one its load
// transaction's records: a thread that loads or presaves partitions reserves
// huge pages for its next ~1,100 at a time (common/allocator_tuning.h).
// `handled`: the partitions this thread took before this one.
void ReserveHugePagesForPartitions(size_t* handled) {
  constexpr size_t kReserveBytes = size_t(16) << 20;
  constexpr size_t kPartitionsPerReserve = 1024;
  if ((*handled)++ % kPartitionsPerReserve == 0) ReserveHugePages(kReserveBytes);
}

// The base offset of the first segment an unclean load recovers: the one
// holding `recovery_point` (the first one when none does). `logs`: base
// offset -> .log file name.
int64_t FirstRecoveredBase(const std::map<int64_t, std::string>& logs, int64_t recovery_point) {
  auto first = logs.upper_bound(recovery_point);
  if (first != logs.begin()) --first;
  return first == logs.end() ? 0 : first->first;
}

// Whether a partition dir's listing shows the journal or undo dir of a load
// a crash interrupted: only then is there anything to roll back first.
bool ShowsInterruptedLoad(const std::vector<DirEntry>& listing) {
  return std::any_of(listing.begin(), listing.end(), [](const DirEntry& e) {
    return e.name == kLoadJournalFileName || e.name == kLoadUndoDirName;
  });
}

// Bytes of the .log files from base `first` on (stat only, no reads).
int64_t LogBytesFrom(FileSystem* fs, const std::string& dir,
                     const std::map<int64_t, std::string>& logs, int64_t first) {
  int64_t total = 0;
  for (auto it = logs.lower_bound(first); it != logs.end(); ++it) {
    auto size = fs->FileSize(JoinPath(dir, it->second));
    if (size.ok()) total += int64_t(*size);
  }
  return total;
}

// A deleted partition's dir (`-delete`, removed the broker's
// log.segment.delete.delay.ms after the start) loads without a scan (LoadLog recovers no segment of
// it): its bytes are not bytes to scan, or the progress of an unclean start soon after a
// DeleteTopics stays short of 100 % once the start is done.
bool IsScanned(const PartitionDir& p) {
  return p.name.kind != DirKind::kDelete;
}

// Whether the dir's checkpoint entries for p's topic-partition (recovery
// point, log start offset, high watermark) are p's own. Kafka writes them
// for live and future logs only, one entry per partition and dir
// (LogManager.logsByDir, ReplicaManager.checkpointHighWatermarks), and never
// keeps a partition's live and future logs in one dir: a `-future` dir's
// entry is its own. A `-delete` or `-stray` dir's entry is the live
// partition's of the same name (the topic was created again) or one left
// from before the rename. Kafka applies no high watermark to either
// (ReplicaManager knows no such partition); its loadLog still hands both the
// recovery point and log start offset by name, but a deleted copy is never
// recovered (LogLoader) and a stray one never served, so Daruma gives them
// neither: the stray copy is recovered from its first segment, which costs
// a scan, and keeps all its records, instead of trusting another log's
// offsets.
bool OwnsCheckpointEntries(const PartitionDir& p) {
  return p.name.kind == DirKind::kLive || p.name.kind == DirKind::kFuture;
}

// Whether the load's repairs, if any, were of derived files only: indexes
// rebuilt or deleted, stray snapshots deleted; nothing copied into the
// quarantine, whose copies must be durable before the pack goes.
bool RepairedOnlyDerivedFiles(const PartitionRecoveryReport& pr) {
  if (!pr.quarantined.empty() || !pr.not_kept.empty()) return false;
  return std::all_of(pr.damage.begin(), pr.damage.end(), [](const ReportedDamage& d) {
    return d.kind == DamageKind::kMissingIndex || d.kind == DamageKind::kCorruptIndex ||
           d.kind == DamageKind::kOrphanIndex || d.kind == DamageKind::kStraySnapshot;
  });
}

}  // namespace

LogDirLoader::LogDirLoader(LogDirs* dirs, LogDirLoaderOptions options)
    : dirs_(dirs), options_(std::move(options)) {
  options_.threads_per_dir = std::max(1, options_.threads_per_dir);
}

LogDirLoader::~LogDirLoader() {
  if (options_.deferred_fs != nullptr) options_.deferred_fs->SetSyncBarrier(nullptr);
}

void LogDirLoader::AddCounters(LogDir& d) {
  std::lock_guard<std::mutex> lock(counters_mu_);
  d.counters = &counters_.emplace_back(d.path);
  for (int i = 0; i < options_.threads_per_dir; ++i) d.counters->remaining_segments.emplace_back(0);
}

void LogDirLoader::Plan(LogDir& d) {
  d.counters->remaining_logs.store(int64_t(d.partitions.size()));
  total_logs_.fetch_add(int64_t(d.partitions.size()));
  remaining_logs_.fetch_add(int64_t(d.partitions.size()));
}

// The recovery point a load of `p` starts from (0: the first segment).
int64_t LogDirLoader::RecoveryPointOf(const LogDir& d, const PartitionDir& p) const {
  if (options_.full_rescan || !OwnsCheckpointEntries(p)) return 0;
  auto rp = d.recovery_points.find(p.name.tp);
  return rp == d.recovery_points.end() ? 0 : rp->second;
}

// Bytes an unclean start scans: every .log from the segment holding the
// recovery point on (stat only, no reads). Index rebuilds below it are not
// counted, so this can be low; the progress line caps its percentage.
void LogDirLoader::EstimateBytesToScan(LogDir& d) {
  int64_t total = 0;
  for (const PartitionDir& p : d.partitions) {
    if (!IsScanned(p)) continue;
    auto entries = options_.fs->ListDir(p.path);
    if (!entries.ok()) continue;
    std::map<int64_t, std::string> logs;
    for (const DirEntry& e : *entries) {
      if (!e.is_regular || !e.name.ends_with(kLogFileSuffix)) continue;
      auto base = OffsetFromFileName(e.name);
      if (base.ok()) logs.emplace(*base, e.name);
    }
    total +=
        LogBytesFrom(options_.fs, p.path, logs, FirstRecoveredBase(logs, RecoveryPointOf(d, p)));
  }
  total_bytes_.fetch_add(total);
}

void LogDirLoader::LoadDirs() {
  // Whether to batch is the probe's syncfs of every dir (CanBatchSyncs). It
  // runs on a thread of its own while the dirs' packs roll back and their
  // presaves list the partitions, which only read (a pack's rollback syncs
  // file by file, whatever the answer); nothing that depends on the answer
  // is written before it (`decide`). A syncfs costs a device flush even
  // with nothing to write (14-20 ms on the benchmark VM's journaled ext4, a
  // tenth of a crashed start of 1,000 partitions), and after a crash it also
  // writes back what the killed process left in the page cache.
  std::shared_future<bool> probe;
  if (options_.deferred_fs != nullptr) {
    probe = std::async(std::launch::async, [this] { return CanBatchSyncs(); }).share();
  }
  std::once_flag decided;
  auto decide = [&] {
    std::call_once(decided, [&] {
      batching_ = probe.valid() && probe.get();
      if (batching_) options_.deferred_fs->set_deferring(true);
    });
  };
  std::vector<std::thread> dir_threads;
  for (auto& d : dirs_->dirs()) {
    if (dirs_->IsOffline(*d)) continue;
    LogDir* dir = d.get();
    dir_threads.emplace_back([this, dir, &decide] {
      const int64_t start = options_.clock->NowNanos();
      RollBackPack(*dir);
      const bool unclean = !dir->had_clean_shutdown || options_.full_rescan;
      // The presave lists every partition dir anyway and estimates the bytes
      // to scan as it does: at 1,000 crashed partitions a listing of each
      // here first, on one thread, was a tenth of the start.
      std::vector<Result<PresaveList>> lists;
      if (options_.deferred_fs != nullptr && options_.load_undo_log && unclean) {
        lists = ListForPresave(*dir);
      }
      decide();
      if (batching_ && options_.load_undo_log) {
        PresaveDir(*dir, std::move(lists));
      } else if (unclean && !lists.empty()) {
        for (const auto& list : lists) {
          if (list.ok()) total_bytes_.fetch_add(list->bytes_to_scan);
        }
      } else if (unclean) {
        EstimateBytesToScan(*dir);
      }
      // One thread per partition (RecoveryThreadsPerPartition): a thread
      // with no partition left to claim scans for those still recovering,
      // until the last one is loaded.
      std::optional<ScanHelpPool> help;
      if (options_.threads_per_dir > 1 && !dir->partitions.empty() &&
          RecoveryThreadsPerPartition(*dir) == 1) {
        help.emplace();
      }
      std::atomic<size_t> next{0};
      std::atomic<size_t> unloaded{dir->partitions.size()};
      RunThreads(options_.threads_per_dir, [&](int thread_index) {
        size_t loaded = 0;
        for (size_t i = next++; i < dir->partitions.size(); i = next++) {
          ReserveHugePagesForPartitions(&loaded);
          LoadPartition(*dir, dir->partitions[i], thread_index, help ? &*help : nullptr);
          dir->counters->remaining_logs.fetch_sub(1);
          remaining_logs_.fetch_sub(1);
          if (unloaded.fetch_sub(1) == 1 && help) help->Close();
        }
        if (help) help->Serve();
      });
      if (batching_) FinishBatchedLoads(*dir);
      dir->duration_ms = ElapsedMs(options_.clock, start);
    });
  }
  for (auto& t : dir_threads) t.join();
  decide();  // every dir offline: no dir thread waited for the probe
  if (batching_) options_.deferred_fs->set_deferring(false);
}

// Before anything reads the dir: the pack of a batched start that a crash
// interrupted rolls back every partition it names (load_undo_pack.h). A
// pack that cannot be read or applied leaves the dir's state unknown: the
// dir goes offline, its files untouched from here on.
void LogDirLoader::RollBackPack(LogDir& d) {
  if (dirs_->IsOffline(d)) return;
  Result<std::vector<std::string>> rolled = RollBackLoadUndoPack(options_.durable_fs, d.path);
  if (!rolled.ok()) {
    dirs_->MarkOffline(d, rolled.status().WithContext(LoadUndoPackPath(d.path)));
    return;
  }
  d.pack_rolled_back.insert(rolled->begin(), rolled->end());
}

// Deferring is one switch for every dir's loads, so it is on only if every
// online dir can be made durable as a whole (a test's in-memory file system,
// say, cannot: its loads then fsync file by file as before).
bool LogDirLoader::CanBatchSyncs() {
  for (auto& d : dirs_->dirs()) {
    if (dirs_->IsOffline(*d)) continue;
    if (!options_.durable_fs->SyncFileSystem(d->path).ok()) return false;
  }
  return true;
}

// What a crashed partition's load is expected to change: the indexes of
// every segment it recovers (pass 5 from the segment holding the recovery
// point on, pass 4 any segment without an .index) are rebuilt in place, and
// producer snapshots are removed and taken again (Kafka's truncateAndReload
// before each recovered segment). Anything else it changes (a truncated
// tail, a quarantined file) is recorded when it happens, with an fsync of
// its own.
Result<LogDirLoader::PresaveList> LogDirLoader::PresavePaths(const LogDir& d,
                                                             const PartitionDir& p) {
  PresaveList out;
  DARUMA_ASSIGN_OR_RETURN(out.listing, options_.durable_fs->ListDir(p.path));
  std::map<int64_t, std::string> logs;  // base offset -> .log file name
  std::set<std::string> names;
  for (const DirEntry& e : out.listing) {
    if (!e.is_regular) continue;
    names.insert(e.name);
    if (e.name.ends_with(kProducerSnapshotFileSuffix)) {
      out.removable.push_back(JoinPath(p.path, e.name));
      continue;
    }
    if (!e.name.ends_with(kLogFileSuffix)) continue;
    auto base = OffsetFromFileName(e.name);
    if (base.ok()) logs.emplace(*base, e.name);
  }
  const int64_t first_recovered = FirstRecoveredBase(logs, RecoveryPointOf(d, p));
  if (IsScanned(p)) {
    out.bytes_to_scan = LogBytesFrom(options_.durable_fs, p.path, logs, first_recovered);
  }
  for (const auto& [base, name] : logs) {
    const std::string index = OffsetIndexFileName(p.path, base);
    if (base < first_recovered && names.count(BaseName(index)) > 0) continue;
    out.saved.push_back(index);
    out.saved.push_back(TimeIndexFileName(p.path, base));
    out.saved.push_back(TxnIndexFileName(p.path, base));
  }
  return out;
}

// The presave's reads, which may run before the probe has answered: each
// partition's PresavePaths, on the dir's threads.
std::vector<Result<LogDirLoader::PresaveList>> LogDirLoader::ListForPresave(const LogDir& d) {
  if (dirs_->IsOffline(d)) return {};  // nothing is presaved or loaded
  std::vector<Result<PresaveList>> lists(d.partitions.size(), Status::Unsupported("not listed"));
  std::atomic<size_t> next{0};
  RunThreads(options_.threads_per_dir, [&](int) {
    size_t listed = 0;
    for (size_t i = next++; i < d.partitions.size(); i = next++) {
      ReserveHugePagesForPartitions(&listed);  // the listings stay with the loads
      lists[i] = PresavePaths(d, d.partitions[i]);
    }
  });
  return lists;
}

// Batched syncs, before any load of an unclean dir: every partition's
// interrupted load is rolled back, its transaction begun and the undo
// records its load will need written (LoadTransaction::Presave), all
// unsynced; then one syncfs makes all of them durable before the first load
// changes anything: the ordering an fsync per record gave, paid once.
void LogDirLoader::PresaveDir(LogDir& d, std::vector<Result<PresaveList>> lists) {
  if (!options_.load_undo_log || (d.had_clean_shutdown && !options_.full_rescan)) return;
  if (dirs_->IsOffline(d)) return;
  // One pack for the dir instead of a journal file per partition; it stays
  // until FinishBatchedLoads, also if empty.
  Result<std::shared_ptr<LoadUndoPackWriter>> pack =
      LoadUndoPackWriter::Create(options_.durable_fs, d.path);
  if (!pack.ok()) {
    dirs_->MarkOffline(d, pack.status());
    return;
  }
  d.pack_written = true;
  std::atomic<size_t> next{0};
  RunThreads(options_.threads_per_dir, [&](int) {
    size_t presaved = 0;
    for (size_t i = next++; i < d.partitions.size(); i = next++) {
      ReserveHugePagesForPartitions(&presaved);
      const PartitionDir& p = d.partitions[i];
      LogDir::Prepared prepared;
      PartitionRecoveryReport scratch;
      // The listing shows an interrupted load's journal or undo dir: only
      // then is there anything to roll back (and the dir to list again).
      Result<PresaveList> list = i < lists.size() ? std::move(lists[i]) : PresavePaths(d, p);
      if (list.ok() && ShowsInterruptedLoad(list->listing)) {
        prepared.status =
            LoadTransaction::RollBackInterrupted(options_.durable_fs, p.path, &scratch);
        if (prepared.status.ok()) list = PresavePaths(d, p);
      }
      if (prepared.status.ok()) {
        prepared.txn = LoadTransaction::Begin(options_.durable_fs, p.path, options_.fs);
        prepared.status =
            list.ok() ? prepared.txn->Presave(list->listing, list->saved, list->removable, *pack)
                      : list.status();
        if (list.ok()) {
          total_bytes_.fetch_add(list->bytes_to_scan);
          prepared.listing = std::move(list->listing);
        }
      }
      prepared.warnings = std::move(scratch.warnings);
      std::lock_guard<std::mutex> lock(dirs_->mu());
      d.prepared[p.path] = std::move(prepared);
    }
  });
  Status st = options_.durable_fs->SyncFileSystem(d.path);
  if (!st.ok()) dirs_->MarkOffline(d, st);
}

// Batched syncs, after a dir's loads: one syncfs makes everything they
// wrote durable (the new indexes, snapshots, truncations: what each load's
// commit and Log::FlushAll synced file by file before), then the undo logs
// go, and a second syncfs makes that final, all before FinishDir writes the
// checkpoints. A crash before the second one rolls a partition back to the
// state it was found in, never to a mix.
void LogDirLoader::FinishBatchedLoads(LogDir& d) {
  std::vector<std::shared_ptr<LoadTransaction>> sealed;
  {
    std::lock_guard<std::mutex> lock(dirs_->mu());
    sealed.swap(d.sealed);
    d.prepared.clear();  // a load the dir going offline skipped: undone next start
  }
  if (dirs_->IsOffline(d)) return;
  if (!d.loads_need_sync) return FinishDerivedOnlyLoads(d, sealed);
  const bool own_files = std::any_of(sealed.begin(), sealed.end(),
                                     [](const auto& txn) { return txn->HasFilesOfItsOwn(); });
  Status st = options_.durable_fs->SyncFileSystem(d.path);
  bool removed = false;
  if (st.ok() && d.pack_written) {
    // The commit point of every load without a journal file of its own.
    // Those with one (or an undo dir) finish only after this removal is
    // durable: removed first, their own journal would leave the pack to
    // roll back only their older records.
    st = options_.durable_fs->Remove(LoadUndoPackPath(d.path));
    d.pack_written = false;
    removed = true;
    if (st.ok() && own_files) st = options_.durable_fs->SyncDir(d.path);
  }
  if (st.ok()) {
    for (const auto& txn : sealed) removed = removed || txn->changed();
    st = FinishSealedInParallel(sealed);
  }
  if (st.ok() && removed) st = options_.durable_fs->SyncFileSystem(d.path);
  if (!st.ok()) dirs_->MarkOffline(d, st);
}

// Batched syncs, after loads that only rebuilt derived files the next
// unclean start would rebuild again (LoadPartition): none of their changes
// need to be durable, so no syncfs. Only the pack's removal must be, before
// anything relies on the new state (a flush making files durable that the
// pack would roll back or remove, a checkpoint with a recovery point past
// such a file): the deferred file system's sync barrier fsyncs the log dir
// before the first sync passed through it (SyncPackRemovals), and FinishDir
// writes no checkpoint that would not change. A crash before that fsync
// rolls back to the state found; after it, a power loss may take any of
// the rebuilt files, which the next start rebuilds again. A recovery point
// a load lowered is checkpointed, durably, before the pack goes: with the
// pack gone and the checkpoint found, its higher point would vouch for
// rebuilt files never synced.
// A load with files of its own (a journal, an undo dir of the snapshots it
// replaced) finishes after the pack's removal is durable, as in
// FinishBatchedLoads, and an fsync of its partition dir makes their removal
// durable too: a journal that a power loss brought back would roll back
// files that a later flush may have made durable below a recovery point.
void LogDirLoader::FinishDerivedOnlyLoads(
    LogDir& d, const std::vector<std::shared_ptr<LoadTransaction>>& sealed) {
  std::vector<std::string> own;
  for (const auto& txn : sealed) {
    if (txn->HasFilesOfItsOwn()) own.push_back(txn->partition_dir());
  }
  Status st = Status::Ok();
  if (d.points_lowered) {
    st = dirs_->CheckpointRecoveryPointsOf(d, /*keep_found=*/true, options_.durable_fs);
  }
  if (st.ok() && d.pack_written) {
    st = options_.durable_fs->Remove(LoadUndoPackPath(d.path));
    d.pack_written = false;
    // Loads with files of their own finish only after the removal is
    // durable. Without them, the fsync of the dir (a journal commit of
    // every change the loads made, ~20 ms per 1,000 partitions on ext4)
    // waits for the sync barrier.
    if (st.ok() && !own.empty()) st = options_.durable_fs->SyncDir(d.path);
    if (st.ok() && own.empty()) {
      {
        std::lock_guard<std::mutex> lock(unsynced_removals_mu_);
        unsynced_removals_.push_back(d.path);
      }
      options_.deferred_fs->SetSyncBarrier([this] { return SyncPackRemovals(); });
    }
  }
  if (st.ok()) st = FinishSealedInParallel(sealed);
  for (size_t i = 0; st.ok() && i < own.size(); ++i) st = options_.durable_fs->SyncDir(own[i]);
  if (!st.ok()) dirs_->MarkOffline(d, st);
}

Status LogDirLoader::SyncPackRemovals() {
  std::lock_guard<std::mutex> lock(unsynced_removals_mu_);
  while (!unsynced_removals_.empty()) {
    DARUMA_RETURN_IF_ERROR(options_.durable_fs->SyncDir(unsynced_removals_.back()));
    unsynced_removals_.pop_back();
  }
  return Status::Ok();
}

// Each removal frees the journal's blocks (and the undo dir's), which waits
// for the device when the file system discards freed blocks (`-o discard`):
// 1,000 journals took 140 ms one after another here and 45-70 ms with 4-8
// removals in flight. The transactions are independent (one partition dir
// each) and nothing relies on the order of their removals: the syncfs after
// them makes all of them durable at once. After the first error no further
// removal starts; the dir goes offline and the next start rolls back the
// partitions whose journals are left.
Status LogDirLoader::FinishSealedInParallel(
    const std::vector<std::shared_ptr<LoadTransaction>>& sealed) {
  constexpr size_t kRemovalsInFlight = 8;
  std::atomic<size_t> next{0};
  std::mutex mu;
  Status first_error;
  RunThreads(int(std::min(kRemovalsInFlight, sealed.size())), [&](int) {
    for (size_t i = next++; i < sealed.size(); i = next++) {
      Status st = sealed[i]->FinishSealed();
      if (st.ok()) continue;
      std::lock_guard<std::mutex> lock(mu);
      if (first_error.ok()) first_error = st;
      next = sealed.size();
    }
  });
  return first_error;
}

// Threads a dir has more of than partitions scan segments of one partition
// ahead of its recovery.
int LogDirLoader::RecoveryThreadsPerPartition(const LogDir& d) const {
  return std::max(1, options_.threads_per_dir / std::max(1, int(d.partitions.size())));
}

void LogDirLoader::LoadPartition(LogDir& d, const PartitionDir& p, int thread_index,
                                 ScanHelpPool* help) {
  if (dirs_->IsOffline(d)) return;  // the dir is lost anyway
  const int64_t start = options_.clock->NowNanos();
  const TopicPartition& tp = p.name.tp;
  PartitionRecoveryReport pr;
  pr.topic = tp.topic;
  pr.partition = tp.partition;
  pr.dir = p.path;
  if (d.pack_rolled_back.count(p.path) > 0) {
    pr.warnings.push_back(LoadTransaction::RolledBackWarning(p.path, kLoadUndoPackFileName));
  }
  const bool own_entries = OwnsCheckpointEntries(p);
  auto find = [&tp, own_entries](const OffsetMap& m) {
    if (!own_entries) return int64_t{0};
    auto it = m.find(tp);
    return it == m.end() ? int64_t{0} : it->second;
  };
  // --full: every segment from the first, as an unclean start from 0 does.
  const bool full = options_.full_rescan;
  if (full && d.had_clean_shutdown && options_.keep_clean_broker_epoch) {
    auto digests = IndexFileDigests(options_.fs, p.path);
    std::lock_guard<std::mutex> lock(dirs_->mu());
    d.index_digests[p.path] = std::move(digests);
  }
  LoadLogParams params{.fs = options_.fs,
                       .log_dir = d.path,
                       .partition_dir = p.path,
                       .tp = tp,
                       .config = options_.config_for(tp.topic),
                       .clock = options_.clock,
                       .had_clean_shutdown = d.had_clean_shutdown && !full,
                       .recovery_point_checkpoint = full ? 0 : find(d.recovery_points),
                       .log_start_offset_checkpoint = find(d.log_start_offsets),
                       .quarantine = options_.quarantine,
                       .remaining_segments = &d.counters->remaining_segments[size_t(thread_index)],
                       .scanned_bytes_progress = &scanned_bytes_,
                       .recovery_threads = RecoveryThreadsPerPartition(d),
                       .scan_help = help,
                       .transactional = options_.load_undo_log,
                       .pack_rolled_back = true};
  // Batched syncs: this manager owns the load's transaction, sealed on
  // success and finished after the dir's syncfs (FinishBatchedLoads).
  std::shared_ptr<LoadTransaction> txn;
  Status prepared = Status::Ok();
  // The listing the load starts from: the presave's, or one taken below.
  std::vector<DirEntry> first_listing;
  if (batching_ && options_.load_undo_log) {
    std::optional<LogDir::Prepared> ahead;
    {
      std::lock_guard<std::mutex> lock(dirs_->mu());
      auto it = d.prepared.find(p.path);
      if (it != d.prepared.end()) {
        ahead = std::move(it->second);
        d.prepared.erase(it);
      }
    }
    if (ahead) {
      for (std::string& w : ahead->warnings) pr.warnings.push_back(std::move(w));
      txn = std::move(ahead->txn);
      prepared = ahead->status;
      if (!prepared.ok() && txn) {
        (void)txn->Rollback();  // records only: the load never started
        txn.reset();
      }
      if (prepared.ok()) {
        // Nothing changed the dir since the presave listed it but the undo
        // log's own file, which the loader ignores.
        first_listing = std::move(ahead->listing);
        params.listing = &first_listing;
      }
    } else {
      // No presave (a clean start): the dir is listed here, once, for the
      // rollback check, the transaction and the load. Only a listing that
      // shows an interrupted load's journal or undo dir costs a rollback and
      // the load a listing of its own (three system calls fewer a partition).
      Result<std::vector<DirEntry>> listed = options_.durable_fs->ListDir(p.path);
      if (listed.ok() && !ShowsInterruptedLoad(*listed)) {
        txn = LoadTransaction::Begin(options_.durable_fs, p.path, options_.fs);
        txn->StartFromListing(*listed);
        first_listing = std::move(*listed);
        params.listing = &first_listing;
      } else {
        prepared = LoadTransaction::RollBackInterrupted(options_.durable_fs, p.path, &pr);
        if (prepared.ok()) txn = LoadTransaction::Begin(options_.durable_fs, p.path, options_.fs);
      }
    }
    params.transaction = txn;
  }
  Result<std::unique_ptr<Log>> loaded =
      prepared.ok() ? LoadLog(params, &pr) : Result<std::unique_ptr<Log>>(prepared);
  // A load that only rebuilt derived files, all at or above the segment
  // holding the recovery point, leaves that point where Kafka's loader
  // does, min(checkpoint, LEO); one that also rebuilt the indexes of every
  // segment from some lower one up (rewritten, or left deferred: IndexFile)
  // lowers it to there. Whatever a power loss takes of those files, the
  // next unclean start rebuilds, so they need no sync now (nor a syncfs of
  // the whole dir). Otherwise (left_unsynced false) everything recovery
  // kept is fsynced before the recovery point can move to the LEO in the
  // checkpoint (a second crash must not lose it), and the deferred indexes
  // are created before the transaction is sealed, so that it records them:
  // the point found on disk lies above them, and a crash before the syncfs
  // must roll them back rather than leave one empty or half written there.
  bool left_unsynced = false;
  int64_t point_before = 0;
  if (txn && loaded.ok()) {
    Log* l = loaded->get();
    point_before = l->recovery_point();
    std::vector<std::string> files;
    if (txn->ChangedOnlyDerivedFiles(&files) && RepairedOnlyDerivedFiles(pr)) {
      left_unsynced = l->LeaveUnsyncedUntilFlush(std::move(files));
    }
    if (!left_unsynced) {
      if (Status created = l->CreateDeferredIndexFiles(); !created.ok()) {
        (void)l->Close();
        loaded->reset();
        loaded = created;
      }
    }
  }
  if (txn && loaded.ok()) {
    txn->Seal();
    std::lock_guard<std::mutex> lock(dirs_->mu());
    d.sealed.push_back(txn);
  } else if (txn) {
    loaded = txn->RollbackAfter(loaded.status(), &pr);
  }
  Status st = loaded.status();
  std::unique_ptr<Log> log;
  bool lowered = false;
  if (st.ok()) {
    log = std::move(*loaded);
    const int64_t checkpointed_hw = find(d.high_watermarks);
    log->UpdateHighWatermark(checkpointed_hw);
    if (checkpointed_hw > log->log_end_offset()) {
      std::string warning =
          fmt::format("{}: high watermark {} in {} is above the log end offset {}: lowered to {}",
                      tp.ToString(), checkpointed_hw, kReplicationOffsetCheckpointFile,
                      log->log_end_offset(), log->high_watermark());
      pr.damage.push_back({DamageKind::kCorruptCheckpoint, warning});
      pr.warnings.push_back(std::move(warning));
    }
    // See above: left unsynced, or synced now.
    if (!left_unsynced) {
      st = log->FlushAll();
    } else {
      lowered = log->recovery_point() < point_before;
    }
  }
  if (!left_unsynced || lowered) {
    std::lock_guard<std::mutex> lock(dirs_->mu());
    if (!left_unsynced) d.loads_need_sync = true;
    if (lowered) d.points_lowered = true;
  }
  d.counters->remaining_segments[size_t(thread_index)].store(0);
  // Out of descriptors (IsTooManyOpenFiles, after the cache released what it
  // could) fails this partition only, like any non-I/O error; so does a file
  // or partition dir whose permissions refuse us (IsAccessDenied): one such
  // file must not take every other partition of the dir offline.
  const bool dir_failed = IsStorageIoError(st);
  if (!st.ok()) {
    pr.errors.push_back(st.ToString());
    pr.damage.push_back({DamageKindOfFailure(st), st.ToString()});
    if (dir_failed) dirs_->failure_channel().MaybeAddOfflineLogDir(d.path, st);
    log.reset();
  } else {
    pr.log_start_offset = log->log_start_offset();
    pr.log_end_offset = log->log_end_offset();
    pr.high_watermark = log->high_watermark();
    pr.recovery_point = log->recovery_point();
    pr.last_stable_offset = log->last_stable_offset();
  }
  pr.duration_ms = ElapsedMs(options_.clock, start);
  if (log && options_.on_loaded) options_.on_loaded(d, log.get());
  {
    std::lock_guard<std::mutex> lock(dirs_->mu());
    if (log) {
      d.kinds[p.path] = p.name.kind;
      d.logs[p.path] = std::move(log);
    } else if (!dir_failed) {
      ++d.failed_partitions;
      d.failed_all_unchanged = d.failed_all_unchanged && pr.left_unchanged;
      d.failed_tps.insert(tp);
    }
  }
  std::lock_guard<std::mutex> lock(reports_mu_);
  reports_.push_back(std::move(pr));
}

void LogDirLoader::FinishDir(LogDir& d) {
  Status st = dirs_->failure_channel().ErrorFor(d.path);
  // Batched, the probe's syncfs (CanBatchSyncs) ran after ReadState: the
  // checkpoints found are durable, so one that would not change stays.
  if (st.ok()) st = dirs_->WriteCheckpoints(d, /*keep_found=*/batching_);
  d.checkpoints_found.clear();
  if (IsTooManyOpenFiles(st)) {
    // Every log is flushed: a checkpoint left old only makes the next
    // unclean start scan more, and the checkpoint jobs write it again.
    dirs_->warnings()[d.path].push_back(st.ToString() + " (checkpoints not written)");
    st = Status::Ok();
  }
  if (!st.ok()) return dirs_->MarkOffline(d, st);
  d.all_loaded = true;
}

std::vector<PartitionRecoveryReport> LogDirLoader::TakeReports() {
  std::lock_guard<std::mutex> lock(reports_mu_);
  return std::move(reports_);
}

std::vector<RecoveryGauges> LogDirLoader::GaugesSnapshot() const {
  std::lock_guard<std::mutex> lock(counters_mu_);
  std::vector<RecoveryGauges> out;
  for (const auto& c : counters_) {
    RecoveryGauges g{c.dir, c.remaining_logs.load(), {}};
    for (const auto& s : c.remaining_segments) g.remaining_segments.push_back(s.load());
    out.push_back(std::move(g));
  }
  return out;
}

ProgressSnapshot LogDirLoader::Progress() const {
  ProgressSnapshot s;
  s.scanned_bytes = scanned_bytes_.load();
  s.total_bytes = total_bytes_.load();
  s.total_logs = total_logs_.load();
  s.remaining_logs = remaining_logs_.load();
  return s;
}

}  // namespace daruma
