#include "recovery/log_manager.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "log/clean_shutdown_file.h"
#include "log/log_file_names.h"
#include "log/meta_properties.h"
#include "log/partition_metadata_file.h"
#include "recovery/clean_shutdown_marker_rule.h"
#include "recovery/log_loader.h"
#include "recovery/log_manager_dir_state.h"

namespace daruma {

namespace {

// Sub-directories of a log dir that are not partition logs (Kafka skips the
// same two). The quarantine lives inside partition dirs (quarantine.h), so it
// never shows up here.
bool IsIgnoredDir(const std::string& name) {
  return name == "remote-log-index-cache" || name == "__cluster_metadata-0";
}

// Runs body(i) for i in [0, threads) on that many std::threads and joins them.
template <typename Body>
void RunThreads(int threads, Body body) {
  std::vector<std::thread> pool;
  pool.reserve(size_t(threads));
  for (int i = 0; i < threads; ++i) pool.emplace_back([&body, i] { body(i); });
  for (auto& t : pool) t.join();
}

int64_t ElapsedMs(Clock* clock, int64_t start_nanos) {
  return (clock->NowNanos() - start_nanos) / 1000000;
}

}  // namespace

LogManager::LogManager(LogManagerOptions options) : options_(options) {
  if (options_.max_open_files > 0) {
    caching_fs_ = std::make_unique<CachingFileSystem>(options_.fs, options_.max_open_files,
                                                      /*defer_opens=*/true);
    options_.fs = caching_fs_.get();
  }
  durable_fs_ = options_.fs;
  if (options_.batch_syncs) {
    deferred_fs_ = std::make_unique<DeferredSyncFileSystem>(options_.fs);
    options_.fs = deferred_fs_.get();
  }
}

// Like a crash, but the cleaner threads must not outlive the logs and the
// scheduler they use.
LogManager::~LogManager() {
  StopCleaner();
}

Status LogManager::Startup(const std::vector<std::string>& log_dirs, const LogConfig& config,
                           int threads_per_dir) {
  if (started_) return Status::InvalidArgument("LogManager::Startup called twice");
  started_ = true;
  config_ = config;
  threads_per_dir_ = std::max(1, threads_per_dir);
  const int64_t start = options_.clock->NowNanos();
  Status st = Prepare(log_dirs);
  if (!st.ok()) {
    FillDirReports();
    for (auto& d : dirs_) d->lock.reset();
    report_.duration_ms = ElapsedMs(options_.clock, start);
    return st;
  }
  for (auto& d : dirs_) {
    if (!failure_channel_.IsOffline(d->path)) ReadDirState(*d);
  }
  LoadTopicConfigs();  // before any log opens: each opens with its overrides
  LoadDirs();
  for (auto& d : dirs_) FinishDir(*d);
  FillDirReports();
  SortPartitionReports();
  report_.duration_ms = ElapsedMs(options_.clock, start);
  return StartJobs();
}

// ---- Prepare: validation only -------------------------------------------------

Status LogManager::Prepare(const std::vector<std::string>& log_dirs) {
  if (log_dirs.empty()) return Status::InvalidArgument("no log directory given");
  std::set<std::string> seen;
  for (const std::string& dir : log_dirs) {
    auto state = std::make_unique<LogDirState>();
    state->path = dir;
    while (state->path.size() > 1 && state->path.back() == '/') state->path.pop_back();
    if (!seen.insert(std::filesystem::path(state->path).lexically_normal().string()).second) {
      return Status::InvalidArgument("log dir " + dir + " is listed twice");
    }
    {
      std::lock_guard<std::mutex> lock(mu_);  // RecoveryGaugesSnapshot may be reading
      state->counters = &counters_.emplace_back(state->path);
      for (int i = 0; i < threads_per_dir_; ++i) {
        state->counters->remaining_segments.emplace_back(0);
      }
    }
    dirs_.push_back(std::move(state));
  }
  std::vector<std::string> fatal;
  for (auto& d : dirs_) {
    Status st = PrepareDir(*d);
    if (st.ok()) continue;
    if (st.IsIoError() && !DirLock::IsHeldElsewhere(st)) {
      MarkOffline(*d, st);  // Kafka: an I/O error here fails only this dir
    } else {
      failure_channel_.MaybeAddOfflineLogDir(d->path, st);
      fatal.push_back(st.message());
    }
  }
  if (fatal.empty()) {
    Status st = CheckMetaProperties();
    if (st.ok()) st = CheckDuplicatePartitions();
    if (!st.ok()) fatal.push_back(st.message());
  }
  if (!fatal.empty()) {
    std::string message = fatal[0];
    for (size_t i = 1; i < fatal.size(); ++i) message += "; " + fatal[i];
    return Status::InvalidArgument(message);
  }
  bool any_online = false;
  for (auto& d : dirs_) any_online |= !failure_channel_.IsOffline(d->path);
  if (!any_online) return Status::IoError("no log directory is usable");
  return Status::Ok();
}

Status LogManager::PrepareDir(LogDirState& d) {
  FileSystem* fs = options_.fs;
  if (!fs->Exists(d.path)) {
    DARUMA_RETURN_IF_ERROR(fs->CreateDir(d.path));
    DARUMA_RETURN_IF_ERROR(fs->SyncDir(ParentDir(d.path)));
  }
  DARUMA_ASSIGN_OR_RETURN(d.lock, DirLock::Acquire(d.path));
  const std::string meta_path = JoinPath(d.path, kMetaPropertiesFileName);
  if (fs->Exists(meta_path)) {
    auto meta = MetaProperties::Read(meta_path, fs);
    if (!meta.ok()) {
      if (meta.status().IsIoError()) return meta.status();
      return Status::InvalidArgument("log dir " + d.path + ": " + meta.status().message());
    }
    d.meta = *meta;
  }
  DARUMA_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs->ListDir(d.path));
  std::sort(entries.begin(), entries.end(),
            [](const DirEntry& a, const DirEntry& b) { return a.name < b.name; });
  for (const DirEntry& e : entries) {
    if (!e.is_directory || IsIgnoredDir(e.name)) continue;
    auto name = ParseTopicPartitionDirName(e.name);
    if (!name.ok()) {
      return Status::InvalidArgument(
          "log dir " + d.path + ": " + name.status().message() +
          " (move it out of the log dir, or name it <topic>-<partition>)");
    }
    d.partitions.push_back({JoinPath(d.path, e.name), *name});
  }
  return Status::Ok();
}

// Every dir that has meta.properties must agree on cluster.id and node.id
// (Kafka refuses to start otherwise: the dirs belong to different brokers).
Status LogManager::CheckMetaProperties() {
  const LogDirState* first = nullptr;
  for (auto& d : dirs_) {
    if (!d->meta) continue;
    if (!first) {
      first = d.get();
      continue;
    }
    if (d->meta->cluster_id != first->meta->cluster_id ||
        d->meta->node_id != first->meta->node_id) {
      return Status::InvalidArgument(
          "meta.properties of " + d->path + " and " + first->path +
          " disagree on cluster.id / node.id: the directories belong to different brokers");
    }
  }
  return Status::Ok();
}

Status LogManager::CheckDuplicatePartitions() const {
  std::map<TopicPartition, std::string> live;
  for (const auto& d : dirs_) {
    for (const PartitionDir& p : d->partitions) {
      if (p.name.kind != DirKind::kLive) continue;
      auto [it, inserted] = live.emplace(p.name.tp, p.path);
      if (!inserted) {
        return Status::InvalidArgument("partition " + p.name.tp.ToString() + " is live in both " +
                                       it->second + " and " + p.path);
      }
    }
  }
  return Status::Ok();
}

// ---- Load ---------------------------------------------------------------------

void LogManager::ReadDirState(LogDirState& d) {
  CleanShutdownFile marker(d.path, options_.fs);
  d.had_clean_shutdown = marker.Exists();
  if (d.had_clean_shutdown) {
    auto epoch = marker.ReadBrokerEpoch();
    if (epoch.ok()) d.broker_epoch = *epoch;
    // Deleted before any log of the dir is loaded: a crash from here on must
    // make the next start unclean.
    Status st = marker.Remove();
    if (st.ok()) st = options_.fs->SyncDir(d.path);
    if (!st.ok()) return MarkOffline(d, st);
  }
  d.recovery_points = ReadCheckpoint(d, kRecoveryPointCheckpointFile);
  d.log_start_offsets = ReadCheckpoint(d, kLogStartOffsetCheckpointFile);
  d.high_watermarks = ReadCheckpoint(d, kReplicationOffsetCheckpointFile);
  d.counters->remaining_logs.store(int64_t(d.partitions.size()));
  total_logs_.fetch_add(int64_t(d.partitions.size()));
  remaining_logs_.fetch_add(int64_t(d.partitions.size()));
  if (!d.had_clean_shutdown || options_.full_rescan) EstimateBytesToScan(d);
}

OffsetMap LogManager::ReadCheckpoint(LogDirState& d, const char* name) {
  auto file = OffsetCheckpointFile::Open(JoinPath(d.path, name), options_.fs);
  Result<OffsetMap> offsets = file.ok() ? file->Read() : Result<OffsetMap>(file.status());
  if (offsets.ok()) return std::move(*offsets);
  dir_warnings_[d.path].push_back(offsets.status().ToString() + " (read as empty)");
  return {};
}

// Bytes an unclean start scans: every .log from the segment holding the
// recovery point on (stat only, no reads). Index rebuilds below it are not
// counted, so this can be low; the progress line caps its percentage.
void LogManager::EstimateBytesToScan(LogDirState& d) {
  int64_t total = 0;
  for (const PartitionDir& p : d.partitions) {
    auto entries = options_.fs->ListDir(p.path);
    if (!entries.ok()) continue;
    std::map<int64_t, std::string> logs;
    for (const DirEntry& e : *entries) {
      if (!e.is_regular || !e.name.ends_with(kLogFileSuffix)) continue;
      auto base = OffsetFromFileName(e.name);
      if (base.ok()) logs.emplace(*base, e.name);
    }
    auto rp = d.recovery_points.find(p.name.tp);
    const bool from_start = options_.full_rescan || rp == d.recovery_points.end();
    auto first = logs.upper_bound(from_start ? 0 : rp->second);
    if (first != logs.begin()) --first;
    for (auto it = first; it != logs.end(); ++it) {
      auto size = options_.fs->FileSize(JoinPath(p.path, it->second));
      if (size.ok()) total += int64_t(*size);
    }
  }
  total_bytes_.fetch_add(total);
}

void LogManager::LoadDirs() {
  batching_ = deferred_fs_ != nullptr && CanBatchSyncs();
  if (batching_) deferred_fs_->set_deferring(true);
  std::vector<std::thread> dir_threads;
  for (auto& d : dirs_) {
    if (failure_channel_.IsOffline(d->path)) continue;
    LogDirState* dir = d.get();
    dir_threads.emplace_back([this, dir] {
      const int64_t start = options_.clock->NowNanos();
      if (batching_) PresaveDir(*dir);
      std::atomic<size_t> next{0};
      RunThreads(threads_per_dir_, [&](int thread_index) {
        for (size_t i = next++; i < dir->partitions.size(); i = next++) {
          LoadPartition(*dir, dir->partitions[i], thread_index);
          dir->counters->remaining_logs.fetch_sub(1);
          remaining_logs_.fetch_sub(1);
        }
      });
      if (batching_) FinishBatchedLoads(*dir);
      dir->duration_ms = ElapsedMs(options_.clock, start);
    });
  }
  for (auto& t : dir_threads) t.join();
  if (batching_) deferred_fs_->set_deferring(false);
}

// Deferring is one switch for every dir's loads, so it is on only if every
// online dir can be made durable as a whole (a test's in-memory file system,
// say, cannot: its loads then fsync file by file as before).
bool LogManager::CanBatchSyncs() {
  for (auto& d : dirs_) {
    if (failure_channel_.IsOffline(d->path)) continue;
    if (!durable_fs_->SyncFileSystem(d->path).ok()) return false;
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
Result<LogManager::PresaveList> LogManager::PresavePaths(const LogDirState& d,
                                                         const PartitionDir& p) {
  PresaveList out;
  DARUMA_ASSIGN_OR_RETURN(out.listing, durable_fs_->ListDir(p.path));
  std::set<int64_t> bases;
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
    if (base.ok()) bases.insert(*base);
  }
  auto rp = d.recovery_points.find(p.name.tp);
  const int64_t recovery_point =
      options_.full_rescan || rp == d.recovery_points.end() ? 0 : rp->second;
  auto first = bases.upper_bound(recovery_point);
  if (first != bases.begin()) --first;
  const int64_t first_recovered = first == bases.end() ? 0 : *first;
  for (int64_t base : bases) {
    const std::string index = OffsetIndexFileName(p.path, base);
    if (base < first_recovered && names.count(BaseName(index)) > 0) continue;
    out.saved.push_back(index);
    out.saved.push_back(TimeIndexFileName(p.path, base));
    out.saved.push_back(TxnIndexFileName(p.path, base));
  }
  return out;
}

// Batched syncs, before any load of an unclean dir: every partition's
// interrupted load is rolled back, its transaction begun and the undo
// records its load will need written (LoadTransaction::Presave), all
// unsynced; then one syncfs makes all of them durable before the first load
// changes anything: the ordering an fsync per record gave, paid once.
void LogManager::PresaveDir(LogDirState& d) {
  if (!options_.load_undo_log || (d.had_clean_shutdown && !options_.full_rescan)) return;
  std::atomic<size_t> next{0};
  RunThreads(threads_per_dir_, [&](int) {
    for (size_t i = next++; i < d.partitions.size(); i = next++) {
      const PartitionDir& p = d.partitions[i];
      LogDirState::Prepared prepared;
      PartitionRecoveryReport scratch;
      prepared.status = LoadTransaction::RollBackInterrupted(durable_fs_, p.path, &scratch);
      if (prepared.status.ok()) {
        prepared.txn = LoadTransaction::Begin(durable_fs_, p.path, options_.fs);
        Result<PresaveList> list = PresavePaths(d, p);
        prepared.status = list.ok()
                              ? prepared.txn->Presave(list->listing, list->saved, list->removable)
                              : list.status();
      }
      prepared.warnings = std::move(scratch.warnings);
      std::lock_guard<std::mutex> lock(mu_);
      d.prepared[p.path] = std::move(prepared);
    }
  });
  Status st = durable_fs_->SyncFileSystem(d.path);
  if (!st.ok()) MarkOffline(d, st);
}

// Batched syncs, after a dir's loads: one syncfs makes everything they
// wrote durable (the new indexes, snapshots, truncations: what each load's
// commit and Log::FlushAll synced file by file before), then the undo logs
// go, and a second syncfs makes that final, all before FinishDir writes the
// checkpoints. A crash before the second one rolls a partition back to the
// state it was found in, never to a mix.
void LogManager::FinishBatchedLoads(LogDirState& d) {
  std::vector<std::shared_ptr<LoadTransaction>> sealed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    sealed.swap(d.sealed);
    d.prepared.clear();  // a load the dir going offline skipped: undone next start
  }
  if (failure_channel_.IsOffline(d.path)) return;
  Status st = durable_fs_->SyncFileSystem(d.path);
  bool removed = false;
  for (const auto& txn : sealed) {
    if (!st.ok()) break;
    removed = removed || txn->changed();
    st = txn->FinishSealed();
  }
  if (st.ok() && removed) st = durable_fs_->SyncFileSystem(d.path);
  if (!st.ok()) MarkOffline(d, st);
}

void LogManager::LoadPartition(LogDirState& d, const PartitionDir& p, int thread_index) {
  if (failure_channel_.IsOffline(d.path)) return;  // the dir is lost anyway
  const int64_t start = options_.clock->NowNanos();
  const TopicPartition& tp = p.name.tp;
  PartitionRecoveryReport pr;
  pr.topic = tp.topic;
  pr.partition = tp.partition;
  pr.dir = p.path;
  auto find = [&tp](const OffsetMap& m) {
    auto it = m.find(tp);
    return it == m.end() ? int64_t{0} : it->second;
  };
  // --full: every segment from the first, as an unclean start from 0 does.
  const bool full = options_.full_rescan;
  if (full && d.had_clean_shutdown && options_.keep_clean_broker_epoch) {
    auto digests = IndexFileDigests(options_.fs, p.path);
    std::lock_guard<std::mutex> lock(mu_);
    d.index_digests[p.path] = std::move(digests);
  }
  LoadLogParams params{
      .fs = options_.fs,
      .log_dir = d.path,
      .partition_dir = p.path,
      .tp = tp,
      .config = ConfigFor(tp.topic),
      .clock = options_.clock,
      .had_clean_shutdown = d.had_clean_shutdown && !full,
      .recovery_point_checkpoint = full ? 0 : find(d.recovery_points),
      .log_start_offset_checkpoint = find(d.log_start_offsets),
      .quarantine = options_.quarantine,
      .remaining_segments = &d.counters->remaining_segments[size_t(thread_index)],
      .scanned_bytes_progress = &scanned_bytes_,
      // Threads a dir has more of than partitions scan
      // segments of one partition ahead of its recovery.
      .recovery_threads = std::max(1, threads_per_dir_ / std::max(1, int(d.partitions.size()))),
      .transactional = options_.load_undo_log};
  // Batched syncs: this manager owns the load's transaction, sealed on
  // success and finished after the dir's syncfs (FinishBatchedLoads).
  std::shared_ptr<LoadTransaction> txn;
  Status prepared = Status::Ok();
  if (batching_ && options_.load_undo_log) {
    std::optional<LogDirState::Prepared> ahead;
    {
      std::lock_guard<std::mutex> lock(mu_);
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
    } else {
      prepared = LoadTransaction::RollBackInterrupted(durable_fs_, p.path, &pr);
      if (prepared.ok()) txn = LoadTransaction::Begin(durable_fs_, p.path, options_.fs);
    }
    params.transaction = txn;
  }
  Result<std::unique_ptr<Log>> loaded =
      prepared.ok() ? LoadLog(params, &pr) : Result<std::unique_ptr<Log>>(prepared);
  if (txn && loaded.ok()) {
    txn->Seal();
    std::lock_guard<std::mutex> lock(mu_);
    d.sealed.push_back(txn);
  } else if (txn) {
    loaded = txn->RollbackAfter(loaded.status(), &pr);
  }
  Status st = loaded.status();
  std::unique_ptr<Log> log;
  if (st.ok()) {
    log = std::move(*loaded);
    log->UpdateHighWatermark(find(d.high_watermarks));
    // fsync everything recovery kept before the recovery point can move to the
    // LEO in the checkpoint (a second crash must not lose it).
    st = log->FlushAll();
  }
  d.counters->remaining_segments[size_t(thread_index)].store(0);
  // Out of descriptors (IsTooManyOpenFiles, after the cache released what it
  // could) fails this partition only, like any non-I/O error.
  const bool dir_failed = st.IsIoError() && !IsTooManyOpenFiles(st);
  if (!st.ok()) {
    pr.errors.push_back(st.ToString());
    if (dir_failed) failure_channel_.MaybeAddOfflineLogDir(d.path, st);
    log.reset();
  } else {
    pr.log_start_offset = log->log_start_offset();
    pr.log_end_offset = log->log_end_offset();
    pr.high_watermark = log->high_watermark();
    pr.recovery_point = log->recovery_point();
    pr.last_stable_offset = log->last_stable_offset();
  }
  pr.duration_ms = ElapsedMs(options_.clock, start);
  if (log) WatchFlushes(d, log.get());
  std::lock_guard<std::mutex> lock(mu_);
  if (log) {
    d.kinds[p.path] = p.name.kind;
    d.logs[p.path] = std::move(log);
  } else if (!dir_failed) {
    ++d.failed_partitions;
    d.failed_all_unchanged = d.failed_all_unchanged && pr.left_unchanged;
    d.failed_tps.insert(tp);
  }
  report_.partitions.push_back(std::move(pr));
}

void LogManager::FinishDir(LogDirState& d) {
  Status st = failure_channel_.ErrorFor(d.path);
  if (st.ok()) st = WriteCheckpoints(d);
  if (IsTooManyOpenFiles(st)) {
    // Every log is flushed: a checkpoint left old only makes the next
    // unclean start scan more, and the checkpoint jobs write it again.
    dir_warnings_[d.path].push_back(st.ToString() + " (checkpoints not written)");
    st = Status::Ok();
  }
  if (!st.ok()) return MarkOffline(d, st);
  d.all_loaded = true;
}

// Writes the three checkpoints of a dir from its loaded logs. Entries of
// partitions that failed to load are carried over so nothing is forgotten.
Status LogManager::WriteCheckpoints(LogDirState& d) {
  DARUMA_RETURN_IF_ERROR(CheckpointRecoveryPointsOf(d));
  DARUMA_RETURN_IF_ERROR(CheckpointLogStartOffsetsOf(d));
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  return WriteCheckpointFile(
      d, kReplicationOffsetCheckpointFile,
      CollectOffsets(d, d.high_watermarks, [](Log& log) { return log.high_watermark(); }));
}

// Callers hold checkpoint_mu_, which also keeps a deleted partition's Log
// alive (ScheduleDirDeletion), so the logs are read outside mu_: a slow fsync
// holding one log's lock does not block GetLog.
OffsetMap LogManager::CollectOffsets(
    LogDirState& d, const OffsetMap& carried,
    const std::function<std::optional<int64_t>(Log&)>& value) const {
  OffsetMap out;
  std::vector<Log*> logs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const TopicPartition& tp : d.failed_tps) {
      auto it = carried.find(tp);
      if (it != carried.end()) out[tp] = it->second;
    }
    for (const auto& [path, log] : d.logs) {
      auto kind = d.kinds.find(path);
      if (kind != d.kinds.end() &&
          (kind->second == DirKind::kDelete || kind->second == DirKind::kStray)) {
        continue;
      }
      logs.push_back(log.get());
    }
  }
  for (Log* log : logs) {
    if (auto v = value(*log)) out[log->topic_partition()] = *v;
  }
  return out;
}

Status LogManager::WriteCheckpointFile(LogDirState& d, const char* name, const OffsetMap& offsets) {
  DARUMA_ASSIGN_OR_RETURN(OffsetCheckpointFile file,
                          OffsetCheckpointFile::Open(JoinPath(d.path, name), options_.fs));
  return file.Write(offsets);
}

Status LogManager::CheckpointRecoveryPointsOf(LogDirState& d) {
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  // Cleared before reading: a flush from here on marks the dir again.
  d.recovery_points_dirty.store(false);
  return WriteCheckpointFile(
      d, kRecoveryPointCheckpointFile,
      CollectOffsets(d, d.recovery_points, [](Log& log) { return log.recovery_point(); }));
}

// Kafka lists only logs whose start is above their first segment's base.
Status LogManager::CheckpointLogStartOffsetsOf(LogDirState& d) {
  std::lock_guard<std::mutex> lock(checkpoint_mu_);
  return WriteCheckpointFile(
      d, kLogStartOffsetCheckpointFile,
      CollectOffsets(d, d.log_start_offsets, [](Log& log) -> std::optional<int64_t> {
        const std::vector<int64_t> bases = log.segment_base_offsets();
        const int64_t start = log.log_start_offset();
        if (!bases.empty() && start > bases.front()) return start;
        return std::nullopt;
      }));
}

// Takes a dir offline: its logs are dropped without flushing (their files may
// be unwritable), and their reports say so.
void LogManager::MarkOffline(LogDirState& d, const Status& error) {
  // Always offline, even for a lack of descriptors (which the channel
  // ignores, and which reaches here only after the cache's release-and-retry
  // failed): the callers found the dir itself unusable (its lock, its
  // clean-shutdown marker) or could not shut it down, and its logs are gone.
  failure_channel_.MaybeAddOfflineLogDir(
      d.path, IsTooManyOpenFiles(error) ? Status(error.code(), error.message()) : error);
  std::lock_guard<std::mutex> lock(mu_);
  d.logs.clear();
  d.all_loaded = false;
  for (auto& pr : report_.partitions) {
    if (ParentDir(pr.dir) == d.path && pr.errors.empty()) {
      pr.warnings.push_back("not serving: log dir " + d.path + " went offline");
    }
  }
}

// Partitions in log-dir order (as configured), then by directory name.
void LogManager::SortPartitionReports() {
  std::map<std::string, size_t> rank;
  for (size_t i = 0; i < dirs_.size(); ++i) rank[dirs_[i]->path] = i;
  auto key = [&rank](const PartitionRecoveryReport& p) {
    return std::pair(rank[ParentDir(p.dir)], BaseName(p.dir));
  };
  std::sort(report_.partitions.begin(), report_.partitions.end(),
            [&key](const PartitionRecoveryReport& a, const PartitionRecoveryReport& b) {
              return key(a) < key(b);
            });
}

void LogManager::FillDirReports() {
  report_.log_dirs.clear();
  for (auto& d : dirs_) {
    LogDirReport r;
    r.path = d->path;
    r.clean_shutdown = d->had_clean_shutdown;
    r.broker_epoch = d->broker_epoch;
    r.marker_out = d->marker_out;
    r.marker_why = d->marker_why;
    Status error = failure_channel_.ErrorFor(d->path);
    r.offline = !error.ok();
    r.error = error.ok() ? "" : error.ToString();
    report_.log_dirs.push_back(std::move(r));
  }
}

// ---- Shutdown -----------------------------------------------------------------

Status LogManager::Shutdown() {
  if (cleaner_.stop) cleaner_.stop();
  if (scheduler_) scheduler_->Shutdown();
  Status first_error;
  for (auto& d : dirs_) {
    if (!d->all_loaded || failure_channel_.IsOffline(d->path)) {
      d->marker_out.reset();
      d->marker_why = "log dir offline or not loaded: no marker, the next start is unclean";
      continue;
    }
    Status st = ShutdownDir(*d);
    if (!st.ok()) {
      MarkOffline(*d, st);
      d->marker_out.reset();
      d->marker_why = "shutdown failed: no marker, the next start is unclean";
      if (first_error.ok()) first_error = st;
    }
  }
  for (auto& d : dirs_) {
    d->logs.clear();
    d->lock.reset();
  }
  FillDirReports();
  return first_error;
}

Status LogManager::ShutdownDir(LogDirState& d) {
  std::vector<Log*> logs;
  for (auto& [path, log] : d.logs) logs.push_back(log.get());
  std::mutex error_mu;
  Status error;
  std::atomic<size_t> next{0};
  // Batched syncs: the flushes and closes defer their fsyncs (tens of
  // thousands for thousands of partitions), and one syncfs makes them durable
  // before the checkpoints and the marker, which sync on their own. Nothing
  // else writes meanwhile: the jobs and the cleaner are stopped.
  if (batching_) deferred_fs_->set_deferring(true);
  RunThreads(threads_per_dir_, [&](int) {
    for (size_t i = next++; i < logs.size(); i = next++) {
      Status st = logs[i]->FlushAll();
      if (st.ok()) st = logs[i]->Close();
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (error.ok()) error = st.WithContext(logs[i]->dir());
      }
    }
  });
  if (batching_) {
    deferred_fs_->set_deferring(false);
    if (error.ok()) error = durable_fs_->SyncFileSystem(d.path);
  }
  DARUMA_RETURN_IF_ERROR(error);
  DARUMA_RETURN_IF_ERROR(WriteCheckpoints(d));
  // A partition that could not be loaded was never recovered: leave the dir
  // unclean so the next start scans it again -- unless the dir had shut down
  // cleanly and every such partition was left exactly as found (its load was
  // undone): then the marker comes back, and those partitions are as clean
  // as they were.
  if (d.failed_partitions > 0 && !(d.had_clean_shutdown && d.failed_all_unchanged)) {
    d.marker_out.reset();
    d.marker_why = std::to_string(d.failed_partitions) +
                   " partition(s) not loaded: no marker, the next start scans them again";
    return Status::Ok();
  }
  DecideDirMarker(d);
  return CleanShutdownFile(d.path, options_.fs).Write(*d.marker_out);
}

// After the logs are closed, so --full compares the index files as Kafka
// will find them (trimmed).
void LogManager::DecideDirMarker(LogDirState& d) {
  if (!options_.keep_clean_broker_epoch) {
    d.marker_out = options_.broker_epoch;
    d.marker_why = "the broker's own epoch";
    return;
  }
  MarkerRuleInput in;
  in.had_marker = d.had_clean_shutdown;
  in.epoch_in = d.broker_epoch;
  in.full_rescan = options_.full_rescan;
  in.unclean_epoch = options_.broker_epoch;
  for (const auto& [path, before] : d.index_digests) {
    in.index_files_changed += CountChangedFiles(before, IndexFileDigests(options_.fs, path));
  }
  for (const PartitionRecoveryReport& p : report_.partitions) {
    if (ParentDir(p.dir) == d.path) in.partitions.push_back(&p);
  }
  const MarkerDecision decision = DecideMarker(in);
  d.marker_out = decision.epoch;
  d.marker_why = decision.why;
}

// ---- Accessors ----------------------------------------------------------------

bool LogManager::HasFailures() const {
  for (const auto& d : dirs_) {
    if (failure_channel_.IsOffline(d->path) || d->failed_partitions > 0) return true;
  }
  return false;
}

std::vector<Log*> LogManager::AllLogs() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<Log*> out;
  for (const auto& d : dirs_) {
    for (const auto& [path, log] : d->logs) out.push_back(log.get());
  }
  return out;
}

Log* LogManager::GetLog(const TopicPartition& tp) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& d : dirs_) {
    auto it = d->logs.find(JoinPath(d->path, LogDirName(tp)));
    if (it != d->logs.end()) return it->second.get();
  }
  return nullptr;
}

nlohmann::json LogManager::ReportJson() const {
  nlohmann::json json = report_.ToJson();
  for (auto& dir : json["logDirs"]) {
    auto it = dir_warnings_.find(dir["path"].get<std::string>());
    dir["warnings"] = it == dir_warnings_.end() ? std::vector<std::string>() : it->second;
  }
  return json;
}

std::vector<RecoveryGauges> LogManager::RecoveryGaugesSnapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RecoveryGauges> out;
  for (const auto& c : counters_) {
    RecoveryGauges g{c.dir, c.remaining_logs.load(), {}};
    for (const auto& s : c.remaining_segments) g.remaining_segments.push_back(s.load());
    out.push_back(std::move(g));
  }
  return out;
}

ProgressSnapshot LogManager::Progress() const {
  ProgressSnapshot s;
  s.scanned_bytes = scanned_bytes_.load();
  s.total_bytes = total_bytes_.load();
  s.total_logs = total_logs_.load();
  s.remaining_logs = remaining_logs_.load();
  return s;
}

}  // namespace daruma
