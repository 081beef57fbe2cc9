// LogCleaner: the background compaction service of one broker (Kafka's
// LogCleaner + LogCleanerManager, spec §11.6).
//
// Logs are registered with their per-topic CompactionConfig; only logs whose
// LogConfig::compact is set are candidates. `log.cleaner.threads` threads
// each own a Cleaner (offset map of dedupe.buffer.size / threads bytes) and
// loop: pick the registered log with the highest dirty ratio above
// min.cleanable.dirty.ratio (or past max.compaction.lag.ms) that no other
// thread is cleaning, clean it, record the new first dirty offset in
// `<log dir>/cleaner-offset-checkpoint`, else sleep log.cleaner.backoff.ms.
// One Throttler caps the I/O of all threads at io.max.bytes.per.second.
//
// Failure policy (Kafka's): an I/O error stops cleaning of that log (the
// owner takes the directory offline through its failure channel, see
// set_io_error_handler); any other error marks the partition uncleanable
// until RemoveLog/AddLog.
//
// Concurrency contract with the rest of the log manager: anything that
// deletes or truncates segments of a compacted log (retention, truncation,
// partition deletion) calls AbortAndPauseCleaning(log) first, which aborts a
// running clean of that log and waits for it to stop (at its next batch, as
// Kafka's checkDone), and ResumeCleaning(log) afterwards. RemoveLog and Stop
// abort the same way.
// Replaced segments' `.deleted` files are removed by the dispose hook
// (default: at once; the log manager should schedule the removal after
// file.delete.delay.ms). Thread-safe.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "common/status.h"
#include "log/cleaner.h"
#include "log/cleaner_config.h"
#include "log/log.h"
#include "log/throttler.h"

namespace daruma {

inline constexpr char kCleanerOffsetCheckpointFileName[] = "cleaner-offset-checkpoint";

class LogCleaner {
 public:
  LogCleaner(FileSystem* fs, const CleanerConfig& config, Clock* clock);
  ~LogCleaner();  // Stop()
  LogCleaner(const LogCleaner&) = delete;
  LogCleaner& operator=(const LogCleaner&) = delete;

  // Registers/unregisters a log; the log must outlive its registration.
  // RemoveLog aborts a running clean of the log and waits for it to stop.
  void AddLog(Log* log, const CompactionConfig& config = {});
  void RemoveLog(Log* log);

  // Starts/stops the threads (Stop aborts the running rounds and waits for
  // them to stop).
  void Start();
  void Stop();

  // One synchronous round over `log` (tests, tools): cleans whatever is
  // cleanable regardless of the dirty ratio and updates the checkpoint.
  // stats.cleaned is false when there was nothing to clean; kAborted when
  // the log was paused or removed, or the cleaner stopped, meanwhile.
  Result<CleanStats> CleanOnce(Log* log, int64_t now_ms);
  // What one thread does per iteration: clean the dirtiest eligible log.
  // nullopt when no log qualified.
  Result<std::optional<CleanStats>> CleanDirtiest(int64_t now_ms);

  void AbortAndPauseCleaning(Log* log);
  void ResumeCleaning(Log* log);
  // Pauses cleaning of `log` unless a clean of it is running now: true when
  // paused (ResumeCleaning ends it) or when the cleaner does not know `log`
  // (nothing to pause), false when busy. Never waits.
  bool TryPauseCleaning(Log* log);

  // The same keyed by partition, matching LogManager's CleanerHooks:
  //   abort_and_pause(tp)                      -> AbortAndPauseCleaning(tp)
  //   resume_after_truncation(tp, dir, offset) -> ResumeAfterTruncation(...)
  //   abort_and_forget(tp, dir)                -> AbortAndForget(tp, dir)
  //   stop                                     -> Stop
  void AbortAndPauseCleaning(const TopicPartition& tp);
  // Lowers the checkpointed first dirty offset to `offset` if it is above
  // (Kafka's maybeTruncateCheckpoint), then resumes cleaning of `tp`.
  Status ResumeAfterTruncation(const TopicPartition& tp, const std::string& log_dir,
                               int64_t offset);
  // Aborts a running clean of `tp` and waits for it to stop, unregisters it
  // and drops it from `<log_dir>/cleaner-offset-checkpoint` (partition
  // deletion).
  Status AbortAndForget(const TopicPartition& tp, const std::string& log_dir);
  // Runs after every successful clean of a log by the threads (the log
  // manager's retention for compact,delete logs: LogManager::RunRetention).
  void set_after_clean_hook(std::function<void(Log*)> hook) { after_clean_ = std::move(hook); }

  // The checkpointed first dirty offset of `log`, if any.
  Result<std::optional<int64_t>> CheckpointedOffset(Log* log);
  bool IsUncleanable(Log* log) const;

  void set_dispose_hook(Cleaner::DisposeSegment hook) { dispose_ = std::move(hook); }
  void set_io_error_handler(std::function<void(Log*, const Status&)> handler) {
    on_io_error_ = std::move(handler);
  }
  const Throttler& throttler() const { return throttler_; }

 private:
  struct Entry {
    CompactionConfig config;
    bool in_progress = false;
    int paused = 0;
    bool uncleanable = false;
    // Set to stop the running clean (Cleaner::Clean polls it per batch);
    // cleared when the log is claimed. Shared so the entry stays copyable;
    // the running clean holds the entry's, which RemoveLog keeps alive
    // until the clean stopped.
    std::shared_ptr<std::atomic<bool>> abort = std::make_shared<std::atomic<bool>>(false);
  };
  // With mu_ held: asks a running clean of `it`'s log to stop.
  static void AbortLocked(Entry& e) {
    if (e.in_progress) e.abort->store(true, std::memory_order_relaxed);
  }
  // Claims `log` for cleaning (false if paused, busy or unknown).
  bool TryClaim(Log* log);
  void Release(Log* log);
  Result<CleanStats> CleanClaimed(Cleaner* cleaner, Log* log, const CompactionConfig& config,
                                  int64_t now_ms, bool force);
  Status WriteCheckpoint(Log* log, int64_t offset);
  Result<std::map<TopicPartition, int64_t>*> CheckpointsFor(const std::string& log_dir);
  void HandleError(Log* log, const Status& st);
  // Cleans the dirtiest log with cleaner `cleaner_index`, which is created
  // (CleanerFor) only once there is a log to clean.
  Result<std::optional<CleanStats>> CleanDirtiestWith(size_t cleaner_index, int64_t now_ms);
  void ThreadMain(size_t index);
  Cleaner* CleanerFor(size_t index);
  // The registered log of `tp`, or null.
  Log* FindLocked(const TopicPartition& tp) const;

  FileSystem* fs_;
  CleanerConfig config_;
  Clock* clock_;
  Throttler throttler_;
  Cleaner::DisposeSegment dispose_;
  std::function<void(Log*, const Status&)> on_io_error_;
  std::function<void(Log*)> after_clean_;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::map<Log*, Entry> logs_;
  // Per log directory (parent of the partition dirs): the checkpoint contents.
  std::map<std::string, std::map<TopicPartition, int64_t>> checkpoints_;
  std::mutex checkpoint_mu_;
  std::vector<std::unique_ptr<Cleaner>> cleaners_;  // one per thread (+ one for CleanOnce)
  std::mutex sync_cleaner_mu_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

}  // namespace daruma
