// Scheduler: the one home for periodic and delayed background jobs (Kafka's
// KafkaScheduler): an asio::thread_pool whose single asio::steady_timer wakes
// up for the earliest due job.
//
// Time: a job is due when clock->NowMs() >= its due time, always judged on the
// injected Clock, never on the timer itself. The timer only decides when to
// look again, so a ManualClock drives the schedule exactly.
//
// Modes:
//   kTimers  jobs run on the pool when due (production).
//   kManual  no timer and no threads: jobs run only inside RunDueJobs(), on the
//            calling thread, so tests are deterministic and need no sleeps.
//
// Contract:
//   * A periodic job never overlaps itself: its next run is scheduled only
//     after the current run returns, at the first multiple of the period after
//     its previous due time that lies in the future (a clock that jumps ahead
//     by ten periods runs the job once, not ten times).
//   * Jobs are run in order of due time (ties: in order of scheduling).
//   * Shutdown() drops jobs not yet started, waits for running ones, and makes
//     later Schedule* calls no-ops. A job's function is destroyed without
//     running if the scheduler shuts down first (so it may own resources).
//   * All methods are thread-safe; jobs may schedule further jobs.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "common/clock.h"

namespace asio {
class thread_pool;
}  // namespace asio

namespace daruma {

class Scheduler {
 public:
  enum class Mode { kTimers, kManual };

  Scheduler(Clock* clock, int threads, Mode mode = Mode::kTimers);
  ~Scheduler();  // Shutdown()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // First run at now + initial_delay_ms, then every period_ms (> 0).
  void SchedulePeriodic(std::string name, int64_t initial_delay_ms, int64_t period_ms,
                        std::function<void()> fn);
  // One run at now + delay_ms.
  void ScheduleOnce(std::string name, int64_t delay_ms, std::function<void()> fn);

  // kManual: runs, on this thread, every job due now (each at most once per
  // call, periodic ones rescheduled). kTimers: does nothing. Returns the
  // number of jobs run.
  int RunDueJobs();
  // The due time of the earliest job, or -1 when there is none (for tests).
  int64_t NextDueMs() const;
  // Names of the scheduled (not yet started) jobs in due order (for tests).
  std::vector<std::string> PendingJobNames() const;

  void Shutdown();
  Clock* clock() const { return clock_; }

 private:
  struct Job {
    std::string name;
    int64_t period_ms = 0;  // 0: one-shot
    int64_t due_ms = 0;
    std::function<void()> fn;
  };
  using Queue = std::multimap<int64_t, std::shared_ptr<Job>>;  // by due time

  void Add(std::shared_ptr<Job> job);
  // Runs one job and reschedules it if periodic.
  void Run(const std::shared_ptr<Job>& job);
  // Removes and returns every job due at `now` (mu_ held).
  std::vector<std::shared_ptr<Job>> TakeDueLocked(int64_t now);
  // kTimers: points the timer at the earliest due job (mu_ held).
  void ArmLocked();
  void OnTimer();

  struct TimerState;
  Clock* clock_;
  Mode mode_;
  mutable std::mutex mu_;
  bool stopped_ = false;
  Queue queue_;
  int running_ = 0;
  std::condition_variable idle_;
  std::unique_ptr<asio::thread_pool> pool_;
  std::unique_ptr<TimerState> timer_;
};

}  // namespace daruma
