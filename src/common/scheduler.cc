#include "common/scheduler.h"

#include <algorithm>
#include <asio.hpp>
#include <chrono>
#include <vector>

namespace daruma {

struct Scheduler::TimerState {
  explicit TimerState(asio::thread_pool& pool) : timer(pool.get_executor()) {}
  asio::steady_timer timer;
};

namespace {

// now + delay, saturating (a delay of Long.MAX means "never").
int64_t DueAfter(int64_t now, int64_t delay_ms) {
  int64_t due = 0;
  if (__builtin_add_overflow(now, std::max<int64_t>(0, delay_ms), &due)) return INT64_MAX;
  return due;
}

}  // namespace

Scheduler::Scheduler(Clock* clock, int threads, Mode mode) : clock_(clock), mode_(mode) {
  if (mode_ == Mode::kTimers) {
    pool_ = std::make_unique<asio::thread_pool>(size_t(std::max(1, threads)));
    timer_ = std::make_unique<TimerState>(*pool_);
  }
}

Scheduler::~Scheduler() {
  Shutdown();
}

void Scheduler::SchedulePeriodic(std::string name, int64_t initial_delay_ms, int64_t period_ms,
                                 std::function<void()> fn) {
  auto job = std::make_shared<Job>();
  job->name = std::move(name);
  job->period_ms = std::max<int64_t>(1, period_ms);
  job->due_ms = DueAfter(clock_->NowMs(), initial_delay_ms);
  job->fn = std::move(fn);
  Add(std::move(job));
}

void Scheduler::ScheduleOnce(std::string name, int64_t delay_ms, std::function<void()> fn) {
  auto job = std::make_shared<Job>();
  job->name = std::move(name);
  job->due_ms = DueAfter(clock_->NowMs(), delay_ms);
  job->fn = std::move(fn);
  Add(std::move(job));
}

void Scheduler::Add(std::shared_ptr<Job> job) {
  std::unique_lock<std::mutex> lock(mu_);
  if (stopped_) {
    lock.unlock();  // the job's function (and what it owns) dies outside the lock
    return;
  }
  queue_.emplace(job->due_ms, std::move(job));
  ArmLocked();
}

std::vector<std::shared_ptr<Scheduler::Job>> Scheduler::TakeDueLocked(int64_t now) {
  std::vector<std::shared_ptr<Job>> due;
  while (!queue_.empty() && queue_.begin()->first <= now) {
    due.push_back(std::move(queue_.begin()->second));
    queue_.erase(queue_.begin());
  }
  running_ += int(due.size());
  return due;
}

void Scheduler::Run(const std::shared_ptr<Job>& job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopped_) {  // taken before Shutdown, not started: dropped
      --running_;
      idle_.notify_all();
      return;
    }
  }
  job->fn();
  std::lock_guard<std::mutex> lock(mu_);
  --running_;
  if (job->period_ms > 0 && !stopped_) {
    const int64_t now = clock_->NowMs();
    // The first multiple of the period after the previous due time that is in
    // the future: a late or jumping clock does not cause a burst of catch-up runs.
    const int64_t behind = std::max<int64_t>(0, now - job->due_ms);
    const int64_t periods = behind / job->period_ms + 1;
    int64_t step = 0;
    // A next run beyond the end of time (period Long.MAX, Kafka's "never") is dropped.
    if (!__builtin_mul_overflow(periods, job->period_ms, &step) &&
        !__builtin_add_overflow(job->due_ms, step, &job->due_ms)) {
      queue_.emplace(job->due_ms, job);
      ArmLocked();
    }
  }
  idle_.notify_all();
}

int Scheduler::RunDueJobs() {
  if (mode_ != Mode::kManual) return 0;
  int ran = 0;
  for (;;) {
    std::vector<std::shared_ptr<Job>> due;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopped_) return ran;
      due = TakeDueLocked(clock_->NowMs());
    }
    if (due.empty()) return ran;
    for (const auto& job : due) Run(job);
    ran += int(due.size());
  }
}

void Scheduler::ArmLocked() {
  if (mode_ != Mode::kTimers || stopped_ || queue_.empty()) return;
  // Capped: the timer only says when to look again (due times are judged on
  // clock_), and steady_clock::now() + Long.MAX ms would overflow.
  constexpr int64_t kMaxWaitMs = 3600000;
  const int64_t delay = std::clamp<int64_t>(queue_.begin()->first - clock_->NowMs(), 0, kMaxWaitMs);
  timer_->timer.expires_after(std::chrono::milliseconds(delay));
  timer_->timer.async_wait([this](const asio::error_code& ec) {
    if (!ec) OnTimer();
  });
}

void Scheduler::OnTimer() {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopped_) return;
  for (auto& job : TakeDueLocked(clock_->NowMs())) {
    asio::post(*pool_, [this, job = std::move(job)] { Run(job); });
  }
  ArmLocked();
}

int64_t Scheduler::NextDueMs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queue_.empty() ? -1 : queue_.begin()->first;
}

std::vector<std::string> Scheduler::PendingJobNames() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> names;
  for (const auto& [due, job] : queue_) names.push_back(job->name);
  return names;
}

void Scheduler::Shutdown() {
  Queue dropped;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stopped_ && !pool_) return;
    stopped_ = true;
    dropped.swap(queue_);
    if (timer_) timer_->timer.cancel();
    idle_.wait(lock, [this] { return running_ == 0; });
  }
  dropped.clear();  // may destroy what jobs owned; outside the lock
  if (pool_) {
    pool_->join();
    timer_.reset();
    pool_.reset();
  }
}

}  // namespace daruma
