// LogJobs' built-in log cleaner (Kafka's LogManager <-> LogCleaner wiring,
// spec §11.6): building it, registering compacted logs, mapping CleanerHooks,
// delayed deletion of replaced segments and retention after cleaning.
// Contract in log_jobs.h.
#include "recovery/log_jobs.h"

namespace daruma {

void LogJobs::StartCleaner() {
  const LogManagerJobsConfig& jobs = config_;
  if (!jobs.enabled || !jobs.cleaner_enabled) return;
  log_cleaner_ = std::make_unique<LogCleaner>(fs_, jobs.cleaner, clock_);
  LogCleaner* cleaner = log_cleaner_.get();
  cleaner->set_dispose_hook([this](Log* log, Log::RetentionResult removed) {
    ScheduleFileDeletion(std::move(removed), log->config_snapshot().file_delete_delay_ms);
  });
  cleaner->set_after_clean_hook([this](Log* log) { AfterClean(log); });
  cleaner->set_io_error_handler([this](Log* log, const Status& st) {
    dirs_->failure_channel().MaybeAddOfflineLogDir(ParentDir(log->dir()), st);
  });
  CleanerHooks hooks;
  hooks.stop = [this] { StopCleaner(); };
  hooks.abort_and_pause = [cleaner](const TopicPartition& tp) {
    cleaner->AbortAndPauseCleaning(tp);
  };
  hooks.resume_after_truncation = [this, cleaner](const TopicPartition& tp,
                                                  const std::string& log_dir, int64_t offset) {
    Status st = cleaner->ResumeAfterTruncation(tp, log_dir, offset);
    if (!st.ok()) OnJobError(log_dir, st);
  };
  hooks.abort_and_forget = [this, cleaner](const TopicPartition& tp, const std::string& log_dir) {
    Status st = cleaner->AbortAndForget(tp, log_dir);
    if (!st.ok()) OnJobError(log_dir, st);
  };
  SetCleanerHooks(std::move(hooks));

  std::vector<std::pair<Log*, LogConfig>> live;
  {
    std::lock_guard<std::mutex> lock(dirs_->mu());
    for (const auto& d : dirs_->dirs()) {
      if (!dirs_->IsServing(*d)) continue;
      for (const auto& [path, log] : d->logs) {
        if (d->IsLive(path)) live.emplace_back(log.get(), log->config_snapshot());
      }
    }
  }
  for (const auto& [log, config] : live) UpdateCleanerRegistration(log, config);

  if (jobs.mode == Scheduler::Mode::kManual) {
    scheduler_->SchedulePeriodic("kafka-log-cleaner", jobs.cleaner.backoff_ms,
                                 jobs.cleaner.backoff_ms, [this] { CleanerJob(); });
  } else {
    cleaner->Start();
  }
}

void LogJobs::StopCleaner() {
  if (log_cleaner_) log_cleaner_->Stop();
}

// Errors are the cleaner's business (HandleError: the log becomes uncleanable,
// an I/O error also takes the dir offline); the job just ends its round.
void LogJobs::CleanerJob() {
  for (;;) {
    auto result = log_cleaner_->CleanDirtiest(clock_->NowMs());
    if (!result.ok() || !result->has_value() || !(*result)->cleaned) return;
  }
}

// Kafka's LogCleaner.cleanFilthiestLog -> deletableLogs: every compacted log
// gets retention after a clean (the log-start-offset breach always; size and
// time with compact,delete: Log::DeleteOldSegments decides). Cleaning of the
// log is paused meanwhile, as for any segment deletion; jobs_mu_ keeps
// AsyncDelete from taking the log away underneath.
void LogJobs::AfterClean(Log* log) {
  std::lock_guard<std::mutex> jobs(jobs_mu_);
  if (!dirs_->IsLiveLog(log) || !log->config_snapshot().compact) return;
  if (retention_hold_ && retention_hold_()) return;
  log_cleaner_->AbortAndPauseCleaning(log);
  (void)RetainLocked(log);
  log_cleaner_->ResumeCleaning(log);
}

void LogJobs::UpdateCleanerRegistration(Log* log, const LogConfig& config) {
  if (!log_cleaner_) return;
  if (config.compact) {
    log_cleaner_->AddLog(log, CompactionConfigOf(config));
  } else {
    log_cleaner_->RemoveLog(log);
  }
}

}  // namespace daruma
