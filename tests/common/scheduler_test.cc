// Scheduler: due times judged on the injected clock, periodic rescheduling
// without catch-up bursts, one-shot jobs, shutdown dropping pending work.
#include "common/scheduler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace daruma {
namespace {

TEST(SchedulerTest, PeriodicJobRunsAfterItsInitialDelayThenEveryPeriod) {
  ManualClock clock(1000);
  Scheduler s(&clock, 1, Scheduler::Mode::kManual);
  int runs = 0;
  s.SchedulePeriodic("tick", 100, 50, [&runs] { ++runs; });
  EXPECT_EQ(s.NextDueMs(), 1100);
  EXPECT_EQ(s.RunDueJobs(), 0);
  clock.Set(1099);
  EXPECT_EQ(s.RunDueJobs(), 0);
  clock.Set(1100);
  EXPECT_EQ(s.RunDueJobs(), 1);
  EXPECT_EQ(s.NextDueMs(), 1150);
  clock.Set(1149);
  EXPECT_EQ(s.RunDueJobs(), 0);
  clock.Set(1150);
  EXPECT_EQ(s.RunDueJobs(), 1);
  EXPECT_EQ(runs, 2);
}

TEST(SchedulerTest, AClockJumpRunsAPeriodicJobOnceNotOncePerMissedPeriod) {
  ManualClock clock(0);
  Scheduler s(&clock, 1, Scheduler::Mode::kManual);
  int runs = 0;
  s.SchedulePeriodic("tick", 10, 10, [&runs] { ++runs; });
  clock.Set(1005);
  EXPECT_EQ(s.RunDueJobs(), 1);
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(s.NextDueMs(), 1010);  // the next multiple of the period
}

TEST(SchedulerTest, OneShotJobRunsOnceAndJobsRunInDueOrder) {
  ManualClock clock(0);
  Scheduler s(&clock, 1, Scheduler::Mode::kManual);
  std::vector<std::string> order;
  s.ScheduleOnce("late", 30, [&order] { order.push_back("late"); });
  s.ScheduleOnce("early", 10, [&order] { order.push_back("early"); });
  s.ScheduleOnce("tie", 10, [&order] { order.push_back("tie"); });
  EXPECT_EQ(s.PendingJobNames(), (std::vector<std::string>{"early", "tie", "late"}));
  clock.Set(100);
  EXPECT_EQ(s.RunDueJobs(), 3);
  EXPECT_EQ(order, (std::vector<std::string>{"early", "tie", "late"}));
  EXPECT_EQ(s.RunDueJobs(), 0);
  EXPECT_EQ(s.NextDueMs(), -1);
}

TEST(SchedulerTest, JobsScheduledByAJobForNowRunInTheSameCall) {
  ManualClock clock(0);
  Scheduler s(&clock, 1, Scheduler::Mode::kManual);
  int second = 0;
  s.ScheduleOnce("first", 0, [&] { s.ScheduleOnce("second", 0, [&second] { ++second; }); });
  EXPECT_EQ(s.RunDueJobs(), 2);
  EXPECT_EQ(second, 1);
}

TEST(SchedulerTest, LongMaxPeriodRunsOnceAndLongMaxDelayNever) {
  ManualClock clock(5);
  Scheduler s(&clock, 1, Scheduler::Mode::kManual);
  int periodic = 0, never = 0;
  s.SchedulePeriodic("flusher", 0, std::numeric_limits<int64_t>::max(), [&] { ++periodic; });
  s.ScheduleOnce("never", std::numeric_limits<int64_t>::max(), [&] { ++never; });
  EXPECT_EQ(s.RunDueJobs(), 1);
  clock.Set(std::numeric_limits<int64_t>::max() - 1);
  EXPECT_EQ(s.RunDueJobs(), 0);
  EXPECT_EQ(periodic, 1);
  EXPECT_EQ(never, 0);
}

TEST(SchedulerTest, ShutdownDropsPendingJobsAndTheirResources) {
  ManualClock clock(0);
  Scheduler s(&clock, 1, Scheduler::Mode::kManual);
  auto resource = std::make_shared<int>(7);
  std::weak_ptr<int> watch = resource;
  int runs = 0;
  s.ScheduleOnce("owns", 10, [&runs, owned = std::move(resource)] { runs += *owned; });
  EXPECT_FALSE(watch.expired());
  s.Shutdown();
  EXPECT_TRUE(watch.expired());
  clock.Set(100);
  EXPECT_EQ(s.RunDueJobs(), 0);
  s.ScheduleOnce("after", 0, [&runs] { ++runs; });
  EXPECT_EQ(s.RunDueJobs(), 0);
  EXPECT_EQ(runs, 0);
}

TEST(SchedulerTest, TimersModeRunsDueJobsOnThePool) {
  Scheduler s(Clock::System(), 2, Scheduler::Mode::kTimers);
  std::mutex mu;
  std::condition_variable cv;
  int runs = 0;
  s.SchedulePeriodic("tick", 0, 5, [&] {
    std::lock_guard<std::mutex> lock(mu);
    ++runs;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu);
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return runs >= 3; }));
  lock.unlock();
  s.Shutdown();
  const int after_shutdown = runs;
  EXPECT_GE(after_shutdown, 3);
  EXPECT_EQ(s.NextDueMs(), -1);
}

}  // namespace
}  // namespace daruma
