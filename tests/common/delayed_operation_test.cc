// DelayedOperationPurgatory (common/delayed_operation.h), one rule per case:
// exactly-once completion whatever completes an operation, watching under
// several typed keys, CheckAndComplete's count and order, expiry on a manual
// clock without sleeps (and only ever of due operations), CompleteAll,
// Shutdown, a runner for forced completions, re-entrant callbacks, and a
// concurrency smoke test on real timers.
#include "common/delayed_operation.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "common/clock.h"
#include "common/scheduler.h"

namespace daruma {
namespace {

using Key = DelayedOperationKey;

// Completes once `*ready` is true; records what ran, in order.
class Probe final : public DelayedOperation {
 public:
  Probe(int64_t delay_ms, std::shared_ptr<std::atomic<bool>> ready, std::string name = "",
        std::vector<std::string>* log = nullptr)
      : DelayedOperation(delay_ms), ready_(std::move(ready)), name_(std::move(name)), log_(log) {}

  std::atomic<int> tries{0};
  std::atomic<int> completions{0};
  std::atomic<int> expirations{0};
  std::atomic<int> in_flight{0};
  std::atomic<bool> overlapped{false};
  std::vector<std::string> events;  // "complete", "expire"

 protected:
  bool TryComplete() override {
    if (in_flight.fetch_add(1) != 0) overlapped = true;
    ++tries;
    const bool ready = ready_->load();
    in_flight.fetch_sub(1);
    return ready ? ForceComplete() : false;
  }
  void OnComplete() override {
    if (in_flight.fetch_add(1) != 0) overlapped = true;
    ++completions;
    events.push_back("complete");
    if (log_ != nullptr) log_->push_back(name_);
    in_flight.fetch_sub(1);
  }
  void OnExpiration() override {
    ++expirations;
    events.push_back("expire");
  }

 private:
  std::shared_ptr<std::atomic<bool>> ready_;
  std::string name_;
  std::vector<std::string>* log_;
};

std::shared_ptr<std::atomic<bool>> Flag(bool value = false) {
  return std::make_shared<std::atomic<bool>>(value);
}

class DelayedOperationTest : public ::testing::Test {
 protected:
  // Moves the clock and runs what became due; returns the jobs run.
  int Advance(int64_t ms) {
    clock_.Advance(ms);
    return scheduler_.RunDueJobs();
  }

  ManualClock clock_{1'000'000};
  Scheduler scheduler_{&clock_, 1, Scheduler::Mode::kManual};
  DelayedOperationPurgatory purgatory_{"test-expiry", &scheduler_};
};

const Key kTopic0 = Key::FetchPartition("t", 0);
const Key kTopic1 = Key::FetchPartition("t", 1);
const Key kJoin = Key::GroupJoin("g1");

TEST(DelayedOperationKeyTest, KeysOfTheSameIdentityAreEqualOrderedAndHashedAlike) {
  EXPECT_EQ(Key::MemberHeartbeat("g", "m"), Key::MemberHeartbeat("g", "m"));
  EXPECT_NE(Key::MemberHeartbeat("g", "m"), Key::PendingMember("g", "m"));
  EXPECT_NE(Key::GroupJoin("g"), Key::GroupSync("g"));
  EXPECT_NE(Key::FetchPartition("t", 0), Key::FetchPartition("t", 1));
  EXPECT_LT(Key::FetchPartition("t", 0), Key::FetchPartition("t", 1));
  DelayedOperationKeyHash hash;
  EXPECT_EQ(hash(Key::GroupJoin("g")), hash(Key::GroupJoin("g")));
  std::unordered_set<Key, DelayedOperationKeyHash> keys = {
      Key::GroupJoin("g"), Key::GroupSync("g"), Key::GroupJoin("g"), Key::FetchClient(7)};
  EXPECT_EQ(keys.size(), 3u);
  EXPECT_EQ(Key::MemberHeartbeat("g1", "m1").ToString(), "member_heartbeat:g1-m1");
  EXPECT_EQ(Key::FetchPartition("t", 3).ToString(), "fetch_partition:t-3");
  EXPECT_EQ(Key::GroupSync("g1").ToString(), "group_sync:g1");
}

TEST_F(DelayedOperationTest, AnOperationThatCanCompleteAtOnceIsNeverWatched) {
  auto op = std::make_shared<Probe>(1000, Flag(true));
  EXPECT_TRUE(purgatory_.TryCompleteElseWatch(op, {kTopic0}));
  EXPECT_EQ(op->completions.load(), 1);
  EXPECT_EQ(op->tries.load(), 1);
  EXPECT_EQ(purgatory_.Delayed(), 0u);
  EXPECT_EQ(scheduler_.NextDueMs(), -1);  // nothing to expire
}

TEST_F(DelayedOperationTest, ItCompletesExactlyOnceWhateverCompletesIt) {
  auto ready = Flag();
  auto op = std::make_shared<Probe>(1000, ready);
  EXPECT_FALSE(purgatory_.TryCompleteElseWatch(op, {kTopic0}));
  EXPECT_EQ(op->tries.load(), 2);  // before and after the watch
  EXPECT_EQ(purgatory_.CheckAndComplete(kTopic0), 0);
  ready->store(true);
  EXPECT_EQ(purgatory_.CheckAndComplete(kTopic0), 1);
  EXPECT_EQ(purgatory_.CheckAndComplete(kTopic0), 0);
  EXPECT_FALSE(op->ForceComplete());
  Advance(1000);
  EXPECT_EQ(purgatory_.CompleteAll(), 0);
  EXPECT_EQ(op->completions.load(), 1);
  EXPECT_EQ(op->expirations.load(), 0);
  DelayedOperationStats stats = purgatory_.Stats(DelayedOperationKind::kFetchPartition);
  EXPECT_EQ(stats.delayed, 0);
  EXPECT_EQ(stats.completed, 1);
  EXPECT_EQ(stats.expired, 0);
}

// The state changed between the first try and the watch (its
// CheckAndComplete found nobody): the try after the watch sees it.
TEST_F(DelayedOperationTest, TheTryAfterTheWatchCatchesAChangeBeforeIt) {
  class SecondTrySucceeds final : public DelayedOperation {
   public:
    SecondTrySucceeds() : DelayedOperation(1000) {}
    int completions = 0;

   protected:
    bool TryComplete() override { return ++tries_ == 2 ? ForceComplete() : false; }
    void OnComplete() override { ++completions; }

   private:
    int tries_ = 0;
  };
  auto op = std::make_shared<SecondTrySucceeds>();
  EXPECT_TRUE(purgatory_.TryCompleteElseWatch(op, {kTopic0}));
  EXPECT_EQ(op->completions, 1);
  EXPECT_EQ(purgatory_.Delayed(), 0u);
  EXPECT_EQ(purgatory_.Watching(kTopic0), 0u);
}

TEST_F(DelayedOperationTest, AnyOfSeveralKeysCompletesItAndItLeavesEveryWatchList) {
  auto ready = Flag();
  auto op = std::make_shared<Probe>(60000, ready);
  const Key client = Key::FetchClient(42);
  ASSERT_FALSE(purgatory_.TryCompleteElseWatch(op, {kTopic0, kTopic1, client}));
  EXPECT_EQ(purgatory_.Watching(kTopic0), 1u);
  EXPECT_EQ(purgatory_.Watching(kTopic1), 1u);
  EXPECT_EQ(purgatory_.Watching(client), 1u);
  EXPECT_EQ(purgatory_.Watching(Key::FetchPartition("t", 2)), 0u);
  ready->store(true);
  EXPECT_EQ(purgatory_.CheckAndComplete(kTopic1), 1);
  EXPECT_EQ(purgatory_.Watching(kTopic0), 0u);
  EXPECT_EQ(purgatory_.Watching(kTopic1), 0u);
  EXPECT_EQ(purgatory_.Watching(client), 0u);
  EXPECT_EQ(purgatory_.Delayed(), 0u);
  // Counted under the kind of the first key only.
  EXPECT_EQ(purgatory_.Stats(DelayedOperationKind::kFetchPartition).completed, 1);
  EXPECT_EQ(purgatory_.Stats(DelayedOperationKind::kFetchClient).completed, 0);
}

TEST_F(DelayedOperationTest, CheckAndCompleteCountsWhatCompletedInWatchOrder) {
  std::vector<std::string> order;
  auto ready_a = Flag(), ready_b = Flag(), ready_c = Flag();
  auto a = std::make_shared<Probe>(60000, ready_a, "a", &order);
  auto b = std::make_shared<Probe>(60000, ready_b, "b", &order);
  auto c = std::make_shared<Probe>(60000, ready_c, "c", &order);
  for (const auto& op : {a, b, c}) ASSERT_FALSE(purgatory_.TryCompleteElseWatch(op, {kJoin}));
  ready_c->store(true);
  ready_a->store(true);
  EXPECT_EQ(purgatory_.CheckAndComplete(kJoin), 2);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "c"}));
  EXPECT_EQ(purgatory_.Watching(kJoin), 1u);
  EXPECT_EQ(b->completions.load(), 0);
}

TEST_F(DelayedOperationTest, TheDeadlineForcesItOnTheManualClockThenExpires) {
  auto op = std::make_shared<Probe>(1000, Flag());
  ASSERT_FALSE(purgatory_.TryCompleteElseWatch(op, {kTopic0}));
  EXPECT_EQ(scheduler_.NextDueMs(), 1'001'000);
  Advance(999);
  EXPECT_EQ(op->completions.load(), 0);
  EXPECT_EQ(purgatory_.Delayed(), 1u);
  EXPECT_EQ(Advance(1), 1);
  EXPECT_EQ(op->completions.load(), 1);
  EXPECT_EQ(op->expirations.load(), 1);
  EXPECT_EQ(op->events, (std::vector<std::string>{"complete", "expire"}));
  EXPECT_EQ(purgatory_.Delayed(), 0u);
  EXPECT_EQ(purgatory_.Watching(kTopic0), 0u);
  EXPECT_EQ(purgatory_.Stats(DelayedOperationKind::kFetchPartition).expired, 1);
  EXPECT_EQ(purgatory_.ExpiryChecks(), 1);
  EXPECT_EQ(scheduler_.NextDueMs(), -1);
}

TEST_F(DelayedOperationTest, AZeroDelayExpiresAtTheNextRunAndNoDelayNeverDoes) {
  auto now = std::make_shared<Probe>(0, Flag());
  auto never = std::make_shared<Probe>(INT64_MAX, Flag());
  ASSERT_FALSE(purgatory_.TryCompleteElseWatch(now, {kTopic0}));
  ASSERT_FALSE(purgatory_.TryCompleteElseWatch(never, {kTopic1}));
  EXPECT_EQ(scheduler_.RunDueJobs(), 1);
  EXPECT_EQ(now->expirations.load(), 1);
  Advance(int64_t(365) * 24 * 3600 * 1000);
  EXPECT_EQ(never->completions.load(), 0);
  EXPECT_EQ(scheduler_.NextDueMs(), -1);
}

// A later deadline is armed first; an earlier one arriving after gets its
// own job, and the later one still expires at its time.
TEST_F(DelayedOperationTest, AnEarlierDeadlineArrivingLaterExpiresFirst) {
  auto late = std::make_shared<Probe>(10000, Flag());
  auto early = std::make_shared<Probe>(100, Flag());
  ASSERT_FALSE(purgatory_.TryCompleteElseWatch(late, {kTopic0}));
  ASSERT_FALSE(purgatory_.TryCompleteElseWatch(early, {kTopic1}));
  Advance(100);
  EXPECT_EQ(early->expirations.load(), 1);
  EXPECT_EQ(late->expirations.load(), 0);
  Advance(9899);
  EXPECT_EQ(late->expirations.load(), 0);
  Advance(1);
  EXPECT_EQ(late->expirations.load(), 1);
}

// Deadlines that keep moving (a heartbeat completing one and watching the
// next) never make the expiry look at an operation that is not due, and
// cost at most one scheduler job per passed earliest deadline.
TEST_F(DelayedOperationTest, OnlyDueOperationsAreEverExamined) {
  constexpr int kWaiting = 1000;
  std::vector<std::shared_ptr<std::atomic<bool>>> flags;
  auto watch_all = [&] {
    for (int i = 0; i < kWaiting; ++i) {
      const Key key = Key::MemberHeartbeat("g" + std::to_string(i), "m");
      if (flags.size() < size_t(kWaiting)) flags.push_back(Flag());
      flags[size_t(i)]->store(true);
      purgatory_.CheckAndComplete(key);  // the heartbeat completes the last one
      flags[size_t(i)]->store(false);
      ASSERT_FALSE(
          purgatory_.TryCompleteElseWatch(std::make_shared<Probe>(10000, flags[size_t(i)]), {key}));
    }
  };
  auto silent = std::make_shared<Probe>(10000, Flag());
  ASSERT_FALSE(purgatory_.TryCompleteElseWatch(silent, {Key::MemberHeartbeat("quiet", "m")}));
  watch_all();
  int jobs = 0;
  for (int step = 1; step <= 600; ++step) {  // 60 s in 100 ms steps
    jobs += Advance(100);
    if (step % 30 == 0) watch_all();  // every 3 s
  }
  EXPECT_EQ(silent->expirations.load(), 1);
  EXPECT_EQ(purgatory_.ExpiryChecks(), 1);
  EXPECT_EQ(purgatory_.Delayed(), size_t(kWaiting));
  EXPECT_LE(jobs, 20);
}

TEST_F(DelayedOperationTest, CompleteAllForcesEverythingNowAndLaterOperationsAtOnce) {
  auto a = std::make_shared<Probe>(60000, Flag());
  auto b = std::make_shared<Probe>(60000, Flag());
  ASSERT_FALSE(purgatory_.TryCompleteElseWatch(a, {kTopic0}));
  ASSERT_FALSE(purgatory_.TryCompleteElseWatch(b, {kTopic1}));
  EXPECT_EQ(purgatory_.CompleteAll(), 2);
  EXPECT_EQ(a->completions.load(), 1);
  EXPECT_EQ(b->completions.load(), 1);
  EXPECT_EQ(a->expirations.load(), 0);
  auto later = std::make_shared<Probe>(60000, Flag());
  EXPECT_TRUE(purgatory_.TryCompleteElseWatch(later, {kTopic0}));
  EXPECT_EQ(later->completions.load(), 1);
  EXPECT_EQ(purgatory_.Delayed(), 0u);
  Advance(60000);
  EXPECT_EQ(a->completions.load() + b->completions.load() + later->completions.load(), 3);
}

TEST_F(DelayedOperationTest, ShutdownDropsWithoutCompletingAndNothingExpiresAfter) {
  auto op = std::make_shared<Probe>(1000, Flag());
  ASSERT_FALSE(purgatory_.TryCompleteElseWatch(op, {kTopic0}));
  purgatory_.Shutdown();
  EXPECT_EQ(purgatory_.Delayed(), 0u);
  Advance(1000);
  EXPECT_EQ(op->completions.load(), 0);
  auto later = std::make_shared<Probe>(1000, Flag());
  EXPECT_FALSE(purgatory_.TryCompleteElseWatch(later, {kTopic0}));
  EXPECT_EQ(purgatory_.Delayed(), 0u);
  Advance(1000);
  EXPECT_EQ(later->completions.load(), 0);
}

TEST_F(DelayedOperationTest, ADestroyedPurgatoryLeavesHarmlessJobsBehind) {
  auto op = std::make_shared<Probe>(1000, Flag());
  {
    DelayedOperationPurgatory short_lived("short", &scheduler_);
    ASSERT_FALSE(short_lived.TryCompleteElseWatch(op, {kTopic0}));
  }
  EXPECT_EQ(Advance(1000), 1);  // the job runs and finds nothing
  EXPECT_EQ(op->completions.load(), 0);
}

// Expiries and CompleteWatchers go through the runner; nothing completes
// until it runs what it was handed.
TEST_F(DelayedOperationTest, ForcedCompletionsGoThroughTheRunner) {
  std::vector<std::function<void()>> handed;
  DelayedOperationPurgatory purgatory(
      "runner", &scheduler_,
      [&handed](std::function<void()> complete) { handed.push_back(std::move(complete)); });
  auto expiring = std::make_shared<Probe>(100, Flag());
  auto gone = std::make_shared<Probe>(60000, Flag());
  const Key client = Key::FetchClient(1);
  ASSERT_FALSE(purgatory.TryCompleteElseWatch(expiring, {kTopic0}));
  ASSERT_FALSE(purgatory.TryCompleteElseWatch(gone, {kTopic0, client}));
  EXPECT_EQ(purgatory.CompleteWatchers(client), 1);
  Advance(100);
  ASSERT_EQ(handed.size(), 2u);
  EXPECT_EQ(expiring->completions.load() + gone->completions.load(), 0);
  for (auto& f : handed) f();
  EXPECT_EQ(expiring->completions.load(), 1);
  EXPECT_EQ(expiring->expirations.load(), 1);
  EXPECT_EQ(gone->completions.load(), 1);
  EXPECT_EQ(gone->expirations.load(), 0);  // forced, not expired
  EXPECT_EQ(purgatory.Delayed(), 0u);
}

// An operation's completion may watch another operation and check its own
// keys again (the group coordinator does both), without deadlocking.
TEST_F(DelayedOperationTest, CallbacksMayCallBackIntoThePurgatory) {
  class Chained final : public DelayedOperation {
   public:
    Chained(DelayedOperationPurgatory* purgatory, std::shared_ptr<Probe> next)
        : DelayedOperation(1000), purgatory_(purgatory), next_(std::move(next)) {}

   protected:
    bool TryComplete() override { return false; }
    void OnComplete() override {
      purgatory_->CheckAndComplete(kJoin);  // finds itself completed: skipped
      purgatory_->TryCompleteElseWatch(next_, {kJoin});
    }

   private:
    DelayedOperationPurgatory* purgatory_;
    std::shared_ptr<Probe> next_;
  };
  auto next = std::make_shared<Probe>(1000, Flag());
  auto first = std::make_shared<Chained>(&purgatory_, next);
  ASSERT_FALSE(purgatory_.TryCompleteElseWatch(first, {kJoin}));
  Advance(1000);
  EXPECT_TRUE(first->IsCompleted());
  EXPECT_EQ(purgatory_.Watching(kJoin), 1u);
  Advance(1000);
  EXPECT_EQ(next->expirations.load(), 1);
}

// Real timers and several threads: watches, wakes and expiries race; every
// operation completes exactly once and none runs two callbacks at once.
TEST(DelayedOperationConcurrencyTest, RacingWakesAndExpiriesCompleteEachOperationOnce) {
  Scheduler scheduler(Clock::System(), 2);
  DelayedOperationPurgatory purgatory("smoke", &scheduler);
  constexpr int kThreads = 4;
  constexpr int kPerThread = 300;
  std::mutex mu;
  std::vector<std::shared_ptr<Probe>> all;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const Key key = Key::FetchPartition("t", i % 5);
        auto ready = Flag(i % 3 == 0);
        auto op = std::make_shared<Probe>(i % 7, ready);
        {
          std::lock_guard<std::mutex> lock(mu);
          all.push_back(op);
        }
        purgatory.TryCompleteElseWatch(op, {key, Key::FetchClient(uint64_t(t))});
        ready->store(true);
        purgatory.CheckAndComplete(Key::FetchPartition("t", (i + t) % 5));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  for (int t = 0; t < kThreads; ++t) purgatory.CheckAndComplete(Key::FetchClient(uint64_t(t)));
  for (int i = 0; i < 5; ++i) purgatory.CheckAndComplete(Key::FetchPartition("t", i));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (purgatory.Delayed() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  scheduler.Shutdown();
  EXPECT_EQ(purgatory.Delayed(), 0u);
  for (const auto& op : all) {
    EXPECT_EQ(op->completions.load(), 1);
    EXPECT_FALSE(op->overlapped.load());
  }
}

}  // namespace
}  // namespace daruma
