#include "recovery/log_manager.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>
#include <tuple>

#include "log/clean_shutdown_file.h"
#include "log/log_file_names.h"
#include "recovery/clean_shutdown_marker_rule.h"
#include "recovery/run_threads.h"

namespace daruma {

LogManagerOptions LogManager::WrapFileSystems(LogManagerOptions options,
                                              std::unique_ptr<CachingFileSystem>* caching,
                                              std::unique_ptr<DeferredSyncFileSystem>* deferred,
                                              FileSystem** durable) {
  if (options.max_open_files > 0) {
    *caching = std::make_unique<CachingFileSystem>(options.fs, options.max_open_files,
                                                   /*defer_opens=*/true);
    options.fs = caching->get();
  }
  *durable = options.fs;
  if (options.batch_syncs) {
    *deferred = std::make_unique<DeferredSyncFileSystem>(options.fs);
    options.fs = deferred->get();
  }
  return options;
}

LogManager::LogManager(LogManagerOptions options)
    : options_(WrapFileSystems(options, &caching_fs_, &deferred_fs_, &durable_fs_)),
      dirs_(options_.fs),
      loader_(&dirs_, LoaderOptions(1)),
      jobs_(&dirs_, options_.jobs, options_.fs, caching_fs_.get(), options_.clock),
      configs_(&dirs_, &jobs_, options_.fs),
      live_(&dirs_, &jobs_, &configs_, options_.fs, options_.clock) {}

// Like a crash: nothing is flushed; ~LogJobs stops the cleaner before the
// logs it uses go.
LogManager::~LogManager() = default;

LogDirLoaderOptions LogManager::LoaderOptions(int threads_per_dir) {
  LogDirLoaderOptions o;
  o.fs = options_.fs;
  o.durable_fs = durable_fs_;
  o.deferred_fs = deferred_fs_.get();
  o.clock = options_.clock;
  o.threads_per_dir = threads_per_dir;
  o.quarantine = options_.quarantine;
  o.full_rescan = options_.full_rescan;
  o.keep_clean_broker_epoch = options_.keep_clean_broker_epoch;
  o.load_undo_log = options_.load_undo_log;
  o.config_for = [this](const std::string& topic) { return configs_.ConfigFor(topic); };
  o.on_loaded = [this](LogDir& d, Log* log) { jobs_.WatchFlushes(d, log); };
  return o;
}

Status LogManager::Startup(const std::vector<std::string>& log_dirs, const LogConfig& config,
                           int threads_per_dir) {
  if (started_) return Status::InvalidArgument("LogManager::Startup called twice");
  started_ = true;
  threads_per_dir_ = std::max(1, threads_per_dir);
  loader_.set_threads_per_dir(threads_per_dir_);
  const int64_t start = options_.clock->NowNanos();
  Status st = dirs_.Add(log_dirs);
  if (st.ok()) {
    for (auto& d : dirs_.dirs()) loader_.AddCounters(*d);
    st = dirs_.Prepare();
  }
  if (!st.ok()) {
    FillDirReports();
    for (auto& d : dirs_.dirs()) d->lock.reset();
    report_.duration_ms = ElapsedMs(options_.clock, start);
    return st;
  }
  for (auto& d : dirs_.dirs()) {
    if (!dirs_.IsOffline(*d) && dirs_.ReadState(*d)) loader_.Plan(*d);
  }
  // Before any log opens: each opens with its overrides.
  configs_.Load(config, options_.import_kafka_topic_configs, options_.kafka_metadata_log_dir);
  // While a Kafka broker's topic configs wait to be imported, its compacted
  // topics run as delete on the defaults: retention deleting their records
  // could not be undone once the import succeeds (Kafka itself refuses to
  // start without its metadata).
  jobs_.SetRetentionHold([this] { return configs_.kafka_import_pending(); });
  loader_.LoadDirs();
  for (auto& d : dirs_.dirs()) loader_.FinishDir(*d);
  configs_.PersistKafkaImport();  // once the dirs serve, so the file can be written
  report_.partitions = loader_.TakeReports();
  FillDirReports();
  SortPartitionReports();
  report_.duration_ms = ElapsedMs(options_.clock, start);
  return jobs_.Start(config);
}

// Partitions in log-dir order (as configured), then by directory name.
// Each report's key is computed once, not at every comparison: a sort of
// 10,000 partitions compared ~170,000 times, two path copies each.
void LogManager::SortPartitionReports() {
  std::map<std::string, size_t> rank;
  for (size_t i = 0; i < dirs_.dirs().size(); ++i) rank[dirs_.dirs()[i]->path] = i;
  struct Keyed {
    size_t rank;
    std::string name;
    size_t at;
  };
  std::vector<Keyed> keyed;
  keyed.reserve(report_.partitions.size());
  for (size_t i = 0; i < report_.partitions.size(); ++i) {
    const std::string& dir = report_.partitions[i].dir;
    auto it = rank.find(ParentDir(dir));
    keyed.push_back({it == rank.end() ? 0 : it->second, BaseName(dir), i});
  }
  std::sort(keyed.begin(), keyed.end(), [](const Keyed& a, const Keyed& b) {
    return std::tie(a.rank, a.name) < std::tie(b.rank, b.name);
  });
  std::vector<PartitionRecoveryReport> sorted;
  sorted.reserve(keyed.size());
  for (const Keyed& k : keyed) sorted.push_back(std::move(report_.partitions[k.at]));
  report_.partitions = std::move(sorted);
}

// Also warns, in the report of each partition of a dir whose logs were
// dropped when it went offline, that the partition is not being served.
void LogManager::FillDirReports() {
  for (const auto& d : dirs_.dirs()) {
    if (!d->dropped) continue;
    const std::string warning = "not serving: log dir " + d->path + " went offline";
    for (auto& pr : report_.partitions) {
      if (ParentDir(pr.dir) != d->path || !pr.errors.empty()) continue;
      if (std::find(pr.warnings.begin(), pr.warnings.end(), warning) == pr.warnings.end()) {
        pr.warnings.push_back(warning);
      }
    }
  }
  report_.log_dirs.clear();
  for (auto& d : dirs_.dirs()) {
    LogDirReport r;
    r.path = d->path;
    r.clean_shutdown = d->had_clean_shutdown;
    r.broker_epoch = d->broker_epoch;
    r.marker_out = d->marker_out;
    r.marker_why = d->marker_why;
    Status error = dirs_.failure_channel().ErrorFor(d->path);
    r.offline = !error.ok();
    r.error = error.ok() ? "" : error.ToString();
    report_.log_dirs.push_back(std::move(r));
  }
}

// ---- Shutdown -----------------------------------------------------------------

Status LogManager::Shutdown() {
  jobs_.Stop();
  Status first_error;
  for (auto& d : dirs_.dirs()) {
    if (!d->all_loaded || dirs_.IsOffline(*d)) {
      d->marker_out.reset();
      d->marker_why = "log dir offline or not loaded: no marker, the next start is unclean";
      continue;
    }
    Status st = ShutdownDir(*d);
    if (!st.ok()) {
      dirs_.MarkOffline(*d, st);
      d->marker_out.reset();
      d->marker_why = "shutdown failed: no marker, the next start is unclean";
      if (first_error.ok()) first_error = st;
    }
  }
  for (auto& d : dirs_.dirs()) {
    // The logs of a dir shut down cleanly are closed: their destructors
    // would only free memory.
    if (options_.exits_after_shutdown && d->all_loaded && !dirs_.IsOffline(*d)) {
      for (auto& [path, log] : d->logs) (void)log.release();
    }
    d->logs.clear();
    d->lock.reset();
  }
  FillDirReports();
  return first_error;
}

Status LogManager::ShutdownDir(LogDir& d) {
  std::vector<Log*> logs;
  for (auto& [path, log] : d.logs) logs.push_back(log.get());
  std::mutex error_mu;
  Status error;
  std::atomic<size_t> next{0};
  // Batched syncs: the flushes and closes defer their fsyncs (tens of
  // thousands for thousands of partitions), and one syncfs makes them durable
  // before the checkpoints and the marker, which sync on their own. Nothing
  // else writes meanwhile: the jobs and the cleaner are stopped.
  const bool batching = loader_.batching();
  if (batching) deferred_fs_->set_deferring(true);
  // A log whose writes stopped on an error that was not the disk's (the dir
  // stayed online) is neither flushed nor closed (both would only repeat
  // its failure): the dir gets no marker, so the next start recovers what is
  // on disk, and the rest of the dir shuts down as usual.
  std::atomic<size_t> stopped{0};
  RunThreads(threads_per_dir_, [&](int) {
    for (size_t i = next++; i < logs.size(); i = next++) {
      if (!logs[i]->write_failure().ok()) {
        ++stopped;
        continue;
      }
      Status st = logs[i]->FlushAll();
      if (st.ok()) st = logs[i]->Close();
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (error.ok()) error = st.WithContext(logs[i]->dir());
      }
    }
  });
  if (batching) {
    deferred_fs_->set_deferring(false);
    if (error.ok()) error = durable_fs_->SyncFileSystem(d.path);
  }
  DARUMA_RETURN_IF_ERROR(error);
  DARUMA_RETURN_IF_ERROR(dirs_.WriteCheckpoints(d));
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
  if (stopped > 0) {
    d.marker_out.reset();
    d.marker_why = std::to_string(stopped.load()) +
                   " partition(s) whose writes had stopped: no marker, the next start recovers "
                   "them";
    return Status::Ok();
  }
  DecideDirMarker(d);
  return CleanShutdownFile(d.path, options_.fs).Write(*d.marker_out);
}

// After the logs are closed, so --full compares the index files as Kafka
// will find them (trimmed).
void LogManager::DecideDirMarker(LogDir& d) {
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

nlohmann::json LogManager::ReportJson() const {
  nlohmann::json json = report_.ToJson();
  for (auto& dir : json["logDirs"]) {
    auto it = dirs_.warnings().find(dir["path"].get<std::string>());
    dir["warnings"] = it == dirs_.warnings().end() ? std::vector<std::string>() : it->second;
  }
  return json;
}

}  // namespace daruma
