// DelayedOperation and DelayedOperationPurgatory: work parked until what it
// waits for happens or its deadline passes (Kafka's DelayedOperation and
// DelayedOperationPurgatory). The purgatory watches each operation under
// typed keys (delayed_operation_key.h: a fetch's partitions, a group's join,
// a member's heartbeat, ...); whoever changes what a key stands for calls
// CheckAndComplete(key), and the operations watching it try again. An
// operation still waiting at its deadline is forced by the expiry.
//
// An operation (subclass) implements:
//   TryComplete()   checks whether it can complete now; if so it calls
//                   ForceComplete() and returns that result, else false. It
//                   must not call into the purgatory before ForceComplete.
//   OnComplete()    the completion itself (answer the request, ...).
//   OnExpiration()  runs after OnComplete() when the deadline completed it.
//
// Guarantees (whatever threads call in):
// - Exactly once: ForceComplete runs OnComplete only for the call that flips
//   the operation to completed, which never goes back.
// - No two of TryComplete and the purgatory's forced completions (expiry,
//   CompleteWatchers, CompleteAll) of one operation run at once: each runs
//   with the operation's own mutex held. So an operation whose TryComplete
//   answered and then completed cannot also be answered by its expiry.
// - No lost wake-up: TryCompleteElseWatch tries, watches every key, then
//   tries once more (all under the operation's mutex), so a change that a
//   CheckAndComplete announced between the first try and the watch is seen
//   by the second try.
// - A completed operation leaves every watch list and the expiry queue at
//   once (ForceComplete unwatches it before OnComplete), so counts are exact.
// - After CompleteAll, TryCompleteElseWatch forces the operation at once.
//   After Shutdown (or destruction), watched operations are dropped without
//   completing and nothing is watched any more.
//
// Time: an operation's deadline is the scheduler's clock at the watch plus its
// delay, and the expiry judges it on that clock only. The purgatory keeps its
// own deadline queue and keeps one Scheduler job armed at (or before) the
// earliest deadline; that job forces what is due and arms the next one. So the
// expiry only ever looks at operations that are due: a purgatory holding many
// waiting operations costs nothing until one of them expires, and a test on a
// ManualClock with a kManual Scheduler advances the clock and calls
// RunDueJobs — no sleeps.
//
// Threading: every method may be called from any thread, and from inside an
// operation's callbacks (while one runs, the purgatory holds no lock that a
// call into it takes). Lock order: an expiry in progress (the lock the
// destructor waits on), an operation's mutex, the purgatory's index. Callbacks
// run on the caller's thread for TryCompleteElseWatch, CheckAndComplete and
// CompleteAll, and inside `runner` for expiries and CompleteWatchers (by
// default at once on the scheduler's thread; the broker's fetches hand them to
// the request pool, the group coordinator takes its lock around them).
// The scheduler must outlive every call into the purgatory; the jobs a
// destroyed purgatory leaves on it do nothing, and the destructor waits for an
// expiry in progress. Work a runner queued elsewhere keeps the operation (and
// the purgatory's state) alive, so it must be drained before whatever the
// operations point to is destroyed.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/delayed_operation_key.h"
#include "common/scheduler.h"

namespace daruma {

namespace delayed_internal {
class PurgatoryState;
}  // namespace delayed_internal

class DelayedOperation {
 public:
  // `delay_ms` from the watch to the forced completion (saturating; a delay
  // of INT64_MAX never expires).
  explicit DelayedOperation(int64_t delay_ms) : delay_ms_(delay_ms) {}
  virtual ~DelayedOperation() = default;
  DelayedOperation(const DelayedOperation&) = delete;
  DelayedOperation& operator=(const DelayedOperation&) = delete;

  // Completes the operation unless it already completed: true when this call
  // did (and ran OnComplete). Call it from TryComplete, or once the operation
  // is in the purgatory (not concurrently with TryCompleteElseWatch).
  bool ForceComplete();
  bool IsCompleted() const { return completed_.load(); }
  int64_t delay_ms() const { return delay_ms_; }

 protected:
  virtual bool TryComplete() = 0;
  virtual void OnComplete() = 0;
  virtual void OnExpiration() {}

 private:
  friend class DelayedOperationPurgatory;
  friend class delayed_internal::PurgatoryState;

  const int64_t delay_ms_;
  // Held around TryComplete and every forced completion the purgatory runs.
  std::mutex mu_;
  std::atomic<bool> completed_{false};
  // Set once, under mu_, when the operation is watched; read by ForceComplete.
  std::weak_ptr<delayed_internal::PurgatoryState> purgatory_;
  uint64_t id_ = 0;
};

// What a purgatory holds and did, per kind; an operation counts under the
// kind of the first key it was watched with (one without keys in none).
struct DelayedOperationStats {
  int64_t delayed = 0;    // watched now
  int64_t completed = 0;  // completed after being watched, expiries included
  int64_t expired = 0;    // forced by their deadline
};

class DelayedOperationPurgatory {
 public:
  // Runs one forced completion (an expiry or a CompleteWatchers); the
  // default runs it at once.
  using Runner = std::function<void(std::function<void()> complete)>;

  // `name` names the scheduler's expiry jobs. `scheduler` outlives this.
  DelayedOperationPurgatory(std::string name, Scheduler* scheduler, Runner runner = nullptr);
  ~DelayedOperationPurgatory();
  DelayedOperationPurgatory(const DelayedOperationPurgatory&) = delete;
  DelayedOperationPurgatory& operator=(const DelayedOperationPurgatory&) = delete;

  // Kafka's tryCompleteElseWatch: true when `op` completed here (at once, or
  // because CompleteAll ran); false when it now waits under `keys` until a
  // CheckAndComplete of one of them completes it or its deadline forces it
  // (with no keys, only the deadline) — or, after Shutdown, when it was not
  // watched at all.
  bool TryCompleteElseWatch(std::shared_ptr<DelayedOperation> op,
                            const std::vector<DelayedOperationKey>& keys);
  // Tries every operation watching `key`, in the order they were watched;
  // returns how many completed.
  int CheckAndComplete(const DelayedOperationKey& key);
  // Forces (through the runner, without OnExpiration) every operation
  // watching `key`; returns how many were handed to the runner.
  int CompleteWatchers(const DelayedOperationKey& key);
  // Forces every watched operation now, on this thread, and every later one
  // at once; returns how many this call completed.
  int CompleteAll();
  // Drops every watched operation without completing it and watches nothing
  // any more (Kafka's purgatory shutdown: nothing expires after it).
  void Shutdown();

  // Operations watched now.
  size_t Delayed() const;
  // Operations watching `key` now.
  size_t Watching(const DelayedOperationKey& key) const;
  DelayedOperationStats Stats(DelayedOperationKind kind) const;
  // Operations the expiry took off its deadline queue so far: only ever
  // ones that were due.
  int64_t ExpiryChecks() const;

 private:
  std::shared_ptr<delayed_internal::PurgatoryState> state_;
};

}  // namespace daruma
