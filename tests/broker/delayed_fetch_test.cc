// DelayedFetchPurgatory (delayed_fetch.h) under several threads: each parked
// fetch responds exactly once and never runs two attempts at once, Park does
// not lose a wake-up that comes before it, expiries run on the work executor
// (not the scheduler's thread), and CompleteAll closes the purgatory. One
// case runs on a manual clock: the max wait is judged on the scheduler's
// clock, without sleeping.
#include "broker/delayed_fetch.h"

#include <gtest/gtest.h>

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "broker/post_runner.h"
#include "common/clock.h"
#include "common/scheduler.h"
#include "server_test_util.h"

namespace daruma::broker {
namespace {

using std::chrono::milliseconds;
using testing::Eventually;

// What one parked fetch saw: how often it responded, whether two attempts
// ever overlapped, and the thread of the response.
struct Probe {
  std::atomic<int> responses{0};
  std::atomic<int> running{0};
  std::atomic<bool> overlapped{false};
  std::atomic<bool> forced{false};
  std::atomic<bool> responded_on_work_executor{false};
  std::mutex mu;
  std::thread::id responder;
  // Tells whether the calling thread is the work executor's (set by tests
  // that check where the response ran).
  std::function<bool()> on_work_executor;
};

// An attempt that completes once `*ready` is set (or when forced).
DelayedFetchPurgatory::Attempt ProbeAttempt(std::shared_ptr<Probe> probe,
                                            std::shared_ptr<std::atomic<bool>> ready) {
  return [probe, ready](bool force) {
    if (probe->running.fetch_add(1) != 0) probe->overlapped = true;
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // a read
    const bool done = force || ready->load();
    if (done) {
      ++probe->responses;
      probe->forced = force;
      if (probe->on_work_executor) probe->responded_on_work_executor = probe->on_work_executor();
      std::lock_guard<std::mutex> lock(probe->mu);
      probe->responder = std::this_thread::get_id();
    }
    probe->running.fetch_sub(1);
    return done;
  };
}

// The scheduler (timers, on the system clock) and a request pool, as the
// broker has them.
class PurgatoryFixture : public ::testing::Test {
 protected:
  PurgatoryFixture()
      : purgatory_(std::make_unique<DelayedFetchPurgatory>(&scheduler_,
                                                           PostRunner(pool_.get_executor()))) {}
  ~PurgatoryFixture() override {
    scheduler_.Shutdown();
    pool_.join();
    purgatory_.reset();
  }
  std::function<bool()> OnPool() {
    return [this] { return pool_.get_executor().running_in_this_thread(); };
  }

  Scheduler scheduler_{Clock::System(), 1};
  asio::thread_pool pool_{4};
  std::unique_ptr<DelayedFetchPurgatory> purgatory_;
};

TEST_F(PurgatoryFixture, ConcurrentWakesCompleteEachFetchExactlyOnce) {
  const TopicPartition a{"t", 0}, b{"t", 1};
  auto ready = std::make_shared<std::atomic<bool>>(false);
  std::vector<std::shared_ptr<Probe>> probes;
  for (int i = 0; i < 20; ++i) {
    probes.push_back(std::make_shared<Probe>());
    purgatory_->Park({a, b}, milliseconds(60000), nullptr, ProbeAttempt(probes.back(), ready));
  }
  EXPECT_EQ(purgatory_->parked(), 20u);
  // Wakes before the data is there complete nothing.
  purgatory_->Wake(a);
  EXPECT_EQ(purgatory_->parked(), 20u);
  ready->store(true);
  std::vector<std::thread> wakers;
  for (int t = 0; t < 4; ++t) {
    wakers.emplace_back([&, t] {
      for (int i = 0; i < 5; ++i) purgatory_->Wake(t % 2 == 0 ? a : b);
    });
  }
  for (std::thread& t : wakers) t.join();
  EXPECT_EQ(purgatory_->parked(), 0u);
  for (const auto& p : probes) {
    EXPECT_EQ(p->responses.load(), 1);
    EXPECT_FALSE(p->overlapped.load());
    EXPECT_FALSE(p->forced.load());
  }
}

// The handler's first try failed; the data arrives (and its Wake finds
// nothing parked) before Park: Park's own re-check completes the fetch.
TEST_F(PurgatoryFixture, ParkRechecksSoAWakeBeforeItIsNotLost) {
  auto ready = std::make_shared<std::atomic<bool>>(false);
  auto probe = std::make_shared<Probe>();
  DelayedFetchPurgatory::Attempt attempt = ProbeAttempt(probe, ready);
  ASSERT_FALSE(attempt(false));  // the handler's own first try
  ready->store(true);
  purgatory_->Wake({"t", 0});  // nobody parked yet
  purgatory_->Park({{"t", 0}}, milliseconds(60000), nullptr, attempt);
  EXPECT_EQ(probe->responses.load(), 1);
  EXPECT_FALSE(probe->forced.load());
  EXPECT_EQ(purgatory_->parked(), 0u);
}

TEST_F(PurgatoryFixture, ExpiryForcesTheFetchOnTheWorkExecutorNotTheSchedulersThread) {
  auto ready = std::make_shared<std::atomic<bool>>(false);
  auto probe = std::make_shared<Probe>();
  probe->on_work_executor = OnPool();
  const auto start = std::chrono::steady_clock::now();
  purgatory_->Park({{"t", 0}}, milliseconds(50), nullptr, ProbeAttempt(probe, ready));
  ASSERT_TRUE(Eventually([&] { return probe->responses.load() == 1; }));
  // The deadline is judged in whole milliseconds of the system clock.
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(49));
  EXPECT_TRUE(probe->forced.load());
  EXPECT_TRUE(probe->responded_on_work_executor.load());
  EXPECT_EQ(purgatory_->parked(), 0u);
  EXPECT_EQ(purgatory_->stats().expired, 1);
  std::lock_guard<std::mutex> lock(probe->mu);
  EXPECT_NE(probe->responder, std::this_thread::get_id());
}

// On a manual clock the max wait passes only when the test moves the clock;
// the forced attempt then waits on the work executor until it runs.
TEST(DelayedFetchManualClockTest, TheMaxWaitIsJudgedOnTheSchedulersClock) {
  ManualClock clock(5000);
  Scheduler scheduler(&clock, 1, Scheduler::Mode::kManual);
  asio::io_context work;
  // Runs what was handed to the work executor (an io_context out of work
  // stops, so it is restarted each time).
  auto drain = [&work] {
    work.restart();
    work.poll();
  };
  DelayedFetchPurgatory purgatory(&scheduler, PostRunner(work.get_executor()));
  auto ready = std::make_shared<std::atomic<bool>>(false);
  auto probe = std::make_shared<Probe>();
  purgatory.Park({{"t", 0}}, milliseconds(500), nullptr, ProbeAttempt(probe, ready));
  clock.Advance(499);
  scheduler.RunDueJobs();
  drain();
  EXPECT_EQ(probe->responses.load(), 0);
  EXPECT_EQ(purgatory.parked(), 1u);
  clock.Advance(1);
  EXPECT_EQ(scheduler.RunDueJobs(), 1);
  EXPECT_EQ(probe->responses.load(), 0);  // handed to the work executor
  drain();
  EXPECT_EQ(probe->responses.load(), 1);
  EXPECT_TRUE(probe->forced.load());
  EXPECT_EQ(purgatory.parked(), 0u);
}

// A fetch completed by a Wake leaves no timer behind: the responder thread
// is the waker's, and it never answers a second time at its max wait.
TEST_F(PurgatoryFixture, WokenFetchIsNotForcedAgainAtItsMaxWait) {
  auto ready = std::make_shared<std::atomic<bool>>(false);
  auto probe = std::make_shared<Probe>();
  purgatory_->Park({{"t", 0}}, milliseconds(30), nullptr, ProbeAttempt(probe, ready));
  ready->store(true);
  purgatory_->Wake({"t", 0});
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(probe->responses.load(), 1);
  EXPECT_FALSE(probe->forced.load());
  std::lock_guard<std::mutex> lock(probe->mu);
  EXPECT_EQ(probe->responder, std::this_thread::get_id());
}

TEST_F(PurgatoryFixture, CompleteAllForcesParkedFetchesAndEveryLaterPark) {
  auto ready = std::make_shared<std::atomic<bool>>(false);
  auto first = std::make_shared<Probe>();
  auto later = std::make_shared<Probe>();
  purgatory_->Park({{"t", 0}}, milliseconds(60000), nullptr, ProbeAttempt(first, ready));
  purgatory_->CompleteAll();
  EXPECT_EQ(first->responses.load(), 1);
  EXPECT_TRUE(first->forced.load());
  purgatory_->Park({{"t", 0}}, milliseconds(60000), nullptr, ProbeAttempt(later, ready));
  EXPECT_EQ(later->responses.load(), 1);
  EXPECT_TRUE(later->forced.load());
  EXPECT_EQ(purgatory_->parked(), 0u);
}

// A client that went away gets its parked fetches answered now (forced, on
// the request pool), not after its max wait; other clients' stay parked.
TEST_F(PurgatoryFixture, CompleteForForcesOnlyThatClientsFetchesNow) {
  auto ready = std::make_shared<std::atomic<bool>>(false);
  auto gone = std::make_shared<ClientScope>();
  auto staying = std::make_shared<ClientScope>();
  auto theirs = std::make_shared<Probe>();
  auto other = std::make_shared<Probe>();
  purgatory_->Park({{"t", 0}}, milliseconds(600000), gone, ProbeAttempt(theirs, ready));
  purgatory_->Park({{"t", 0}}, milliseconds(600000), staying, ProbeAttempt(other, ready));
  EXPECT_EQ(purgatory_->parked(), 2u);
  gone->gone = true;
  theirs->on_work_executor = OnPool();
  purgatory_->CompleteFor(gone);
  ASSERT_TRUE(Eventually([&] { return theirs->responses.load() == 1; }));
  EXPECT_TRUE(theirs->forced.load());
  EXPECT_TRUE(theirs->responded_on_work_executor.load());
  EXPECT_EQ(other->responses.load(), 0);
  EXPECT_EQ(purgatory_->parked(), 1u);
  EXPECT_EQ(purgatory_->completed_for_gone_clients(), 1);
  purgatory_->CompleteFor(gone);  // nothing left for it: a no-op
  EXPECT_EQ(purgatory_->completed_for_gone_clients(), 1);
}

// A fetch that parks after its client left (the request was on the pool
// when the connection closed) is forced at once and never indexed.
TEST_F(PurgatoryFixture, ParkForAClientAlreadyGoneForcesAtOnce) {
  auto ready = std::make_shared<std::atomic<bool>>(false);
  auto gone = std::make_shared<ClientScope>();
  gone->gone = true;
  auto probe = std::make_shared<Probe>();
  purgatory_->Park({{"t", 0}}, milliseconds(600000), gone, ProbeAttempt(probe, ready));
  EXPECT_EQ(probe->responses.load(), 1);
  EXPECT_TRUE(probe->forced.load());
  EXPECT_EQ(purgatory_->parked(), 0u);
  EXPECT_EQ(purgatory_->completed_for_gone_clients(), 1);
}

// Wakes racing the expiry: whichever wins, one response.
TEST_F(PurgatoryFixture, WakeRacingTheExpiryStillRespondsOnce) {
  std::vector<std::shared_ptr<Probe>> probes;
  auto ready = std::make_shared<std::atomic<bool>>(true);
  auto never = std::make_shared<std::atomic<bool>>(false);
  for (int i = 0; i < 50; ++i) {
    probes.push_back(std::make_shared<Probe>());
    // Parked (the re-check fails), then both woken and expiring around 5 ms.
    auto probe = probes.back();
    auto tries = std::make_shared<std::atomic<int>>(0);
    purgatory_->Park({{"t", i % 3}}, milliseconds(5), nullptr,
                     [probe, tries, ready, never](bool force) {
                       return ProbeAttempt(probe, ++*tries <= 1 ? never : ready)(force);
                     });
  }
  std::this_thread::sleep_for(milliseconds(4));
  for (int i = 0; i < 3; ++i) purgatory_->Wake({"t", i});
  ASSERT_TRUE(Eventually([&] {
    for (const auto& p : probes) {
      if (p->responses.load() == 0) return false;
    }
    return true;
  }));
  std::this_thread::sleep_for(milliseconds(50));
  for (const auto& p : probes) {
    EXPECT_EQ(p->responses.load(), 1);
    EXPECT_FALSE(p->overlapped.load());
  }
}

}  // namespace
}  // namespace daruma::broker
