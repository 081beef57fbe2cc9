#include "common/delayed_operation.h"

#include <optional>
#include <set>
#include <unordered_map>
#include <utility>

namespace daruma {
namespace delayed_internal {

// What a purgatory owns, shared with its scheduler jobs (which hold it
// weakly, so a job that fires after the purgatory is gone does nothing) and
// with its operations (ForceComplete unwatches through it).
//
// Invariants, under mu_:
// - An operation is in ops_ iff it is watched and not completed; it is then
//   in watchers_ under each of its keys, and in expiry_ while its deadline
//   has not been taken by the expiry.
// - Whenever expiry_ is not empty, some scheduled job is due no later than
//   its earliest deadline (armed_ holds the deadlines jobs were armed for;
//   a job erases its own when it runs).
class PurgatoryState : public std::enable_shared_from_this<PurgatoryState> {
 public:
  enum class Mode { kOpen, kCompletedAll, kShutDown };

  PurgatoryState(std::string name, Scheduler* scheduler, DelayedOperationPurgatory::Runner runner)
      : name_(std::move(name)), scheduler_(scheduler), runner_(std::move(runner)) {
    if (!runner_) runner_ = [](std::function<void()> complete) { complete(); };
  }

  Mode mode() const {
    std::lock_guard<std::mutex> lock(mu_);
    return mode_;
  }

  // Watches `op` under `keys` with its deadline from now; returns the mode
  // it found (the operation is watched only when kOpen). op->mu_ held.
  Mode Watch(const std::shared_ptr<DelayedOperation>& op,
             const std::vector<DelayedOperationKey>& keys) {
    std::lock_guard<std::mutex> lock(mu_);
    if (mode_ != Mode::kOpen) return mode_;
    const uint64_t id = ++next_id_;
    const int64_t now = scheduler_->clock()->NowMs();
    int64_t deadline = INT64_MAX;
    if (op->delay_ms() < INT64_MAX && __builtin_add_overflow(now, op->delay_ms(), &deadline)) {
      deadline = INT64_MAX;
    }
    op->purgatory_ = weak_from_this();
    op->id_ = id;
    Entry& e = ops_[id];
    e.op = op;
    e.keys = keys;
    if (!keys.empty()) e.kind = keys.front().kind;
    e.deadline_ms = deadline;
    for (const DelayedOperationKey& key : keys) watchers_[key].insert(id);
    // INT64_MAX is "never": not queued, so it never arms a job.
    e.queued = deadline != INT64_MAX;
    if (e.queued) expiry_.insert({deadline, id});
    if (e.kind) ++stats_[size_t(*e.kind)].delayed;
    ArmLocked(now);
    return Mode::kOpen;
  }

  // Removes a completed operation from every index (no-op if it is not
  // there: dropped by Shutdown, or unwatched already).
  void Unwatch(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = ops_.find(id);
    if (it == ops_.end()) return;
    Entry& e = it->second;
    for (const DelayedOperationKey& key : e.keys) {
      auto w = watchers_.find(key);
      if (w == watchers_.end()) continue;
      w->second.erase(id);
      if (w->second.empty()) watchers_.erase(w);
    }
    if (e.queued) expiry_.erase({e.deadline_ms, id});
    if (e.kind) {
      DelayedOperationStats& s = stats_[size_t(*e.kind)];
      --s.delayed;
      ++s.completed;
    }
    ops_.erase(it);
  }

  std::vector<std::shared_ptr<DelayedOperation>> WatchersOf(const DelayedOperationKey& key) const {
    std::vector<std::shared_ptr<DelayedOperation>> out;
    std::lock_guard<std::mutex> lock(mu_);
    auto w = watchers_.find(key);
    if (w == watchers_.end()) return out;
    for (uint64_t id : w->second) out.push_back(ops_.at(id).op);
    return out;
  }

  // Switches to `mode` (kCompletedAll or kShutDown) and returns every
  // watched operation; kShutDown also forgets them.
  std::vector<std::shared_ptr<DelayedOperation>> Close(Mode mode) {
    std::vector<std::shared_ptr<DelayedOperation>> all;
    std::lock_guard<std::mutex> lock(mu_);
    if (mode_ != Mode::kShutDown) mode_ = mode;
    for (auto& [id, e] : ops_) all.push_back(e.op);
    if (mode == Mode::kShutDown) {
      ops_.clear();
      watchers_.clear();
      expiry_.clear();
      for (DelayedOperationStats& s : stats_) s.delayed = 0;
    }
    return all;
  }

  // Runs a forced completion through the runner; `expired` counts it as an
  // expiry and runs OnExpiration after OnComplete.
  void Force(std::shared_ptr<DelayedOperation> op, std::optional<DelayedOperationKind> kind,
             bool expired) {
    runner_([self = shared_from_this(), op = std::move(op), kind, expired] {
      std::lock_guard<std::mutex> op_lock(op->mu_);
      if (!op->ForceComplete() || !expired) return;
      if (kind) {
        std::lock_guard<std::mutex> lock(self->mu_);
        ++self->stats_[size_t(*kind)].expired;
      }
      op->OnExpiration();
    });
  }

  // The scheduler job armed for `armed_ms`: forces every operation due now
  // and arms the next job. reap_mu_ is held throughout, so the destructor of
  // the purgatory can wait for an expiry in progress.
  void Reap(int64_t armed_ms) {
    std::lock_guard<std::mutex> reaping(reap_mu_);
    std::vector<std::pair<std::shared_ptr<DelayedOperation>, std::optional<DelayedOperationKind>>>
        due;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto a = armed_.find(armed_ms); a != armed_.end()) armed_.erase(a);
      if (mode_ == Mode::kShutDown) return;
      const int64_t now = scheduler_->clock()->NowMs();
      while (!expiry_.empty() && expiry_.begin()->first <= now) {
        Entry& e = ops_.at(expiry_.begin()->second);
        expiry_.erase(expiry_.begin());
        e.queued = false;
        due.emplace_back(e.op, e.kind);
        ++expiry_checks_;
      }
      ArmLocked(now);
    }
    for (auto& [op, kind] : due) Force(std::move(op), kind, true);
  }

  // Makes Reap a no-op from now on and waits for one in progress.
  void StopReaping() {
    std::lock_guard<std::mutex> reaping(reap_mu_);
    Close(Mode::kShutDown);
  }

  size_t Delayed() const {
    std::lock_guard<std::mutex> lock(mu_);
    return ops_.size();
  }
  size_t Watching(const DelayedOperationKey& key) const {
    std::lock_guard<std::mutex> lock(mu_);
    auto w = watchers_.find(key);
    return w == watchers_.end() ? 0 : w->second.size();
  }
  DelayedOperationStats Stats(DelayedOperationKind kind) const {
    std::lock_guard<std::mutex> lock(mu_);
    return stats_[size_t(kind)];
  }
  int64_t ExpiryChecks() const {
    std::lock_guard<std::mutex> lock(mu_);
    return expiry_checks_;
  }

 private:
  struct Entry {
    std::shared_ptr<DelayedOperation> op;
    std::vector<DelayedOperationKey> keys;
    std::optional<DelayedOperationKind> kind;  // the first key's; none without keys
    int64_t deadline_ms = 0;
    bool queued = false;  // in expiry_
  };

  // Arms a job for the earliest deadline unless one is armed no later.
  void ArmLocked(int64_t now) {
    if (expiry_.empty()) return;
    const int64_t next = expiry_.begin()->first;
    if (!armed_.empty() && *armed_.begin() <= next) return;
    armed_.insert(next);
    scheduler_->ScheduleOnce(name_, next - now, [weak = weak_from_this(), next] {
      if (std::shared_ptr<PurgatoryState> self = weak.lock()) {
        self->Reap(next);
      }
    });
  }

  const std::string name_;
  Scheduler* const scheduler_;
  DelayedOperationPurgatory::Runner runner_;
  std::mutex reap_mu_;
  mutable std::mutex mu_;
  Mode mode_ = Mode::kOpen;
  uint64_t next_id_ = 0;
  std::unordered_map<uint64_t, Entry> ops_;
  // Ids rise with each watch, so a key's set lists its watchers in order.
  std::unordered_map<DelayedOperationKey, std::set<uint64_t>, DelayedOperationKeyHash> watchers_;
  std::set<std::pair<int64_t, uint64_t>> expiry_;  // (deadline, id)
  std::multiset<int64_t> armed_;
  std::array<DelayedOperationStats, kDelayedOperationKinds> stats_{};
  int64_t expiry_checks_ = 0;
};

}  // namespace delayed_internal

using delayed_internal::PurgatoryState;

bool DelayedOperation::ForceComplete() {
  bool expected = false;
  if (!completed_.compare_exchange_strong(expected, true)) return false;
  if (std::shared_ptr<PurgatoryState> purgatory = purgatory_.lock()) purgatory->Unwatch(id_);
  OnComplete();
  return true;
}

DelayedOperationPurgatory::DelayedOperationPurgatory(std::string name, Scheduler* scheduler,
                                                     Runner runner)
    : state_(std::make_shared<PurgatoryState>(std::move(name), scheduler, std::move(runner))) {}

DelayedOperationPurgatory::~DelayedOperationPurgatory() {
  state_->StopReaping();
}

bool DelayedOperationPurgatory::TryCompleteElseWatch(std::shared_ptr<DelayedOperation> op,
                                                     const std::vector<DelayedOperationKey>& keys) {
  std::lock_guard<std::mutex> op_lock(op->mu_);
  if (op->completed_) return true;
  if (state_->mode() == PurgatoryState::Mode::kCompletedAll) {
    op->ForceComplete();
    return true;
  }
  if (op->TryComplete()) return true;
  switch (state_->Watch(op, keys)) {
    case PurgatoryState::Mode::kOpen:
      break;
    case PurgatoryState::Mode::kCompletedAll:
      // CompleteAll ran between the first try and the watch.
      op->ForceComplete();
      return true;
    case PurgatoryState::Mode::kShutDown:
      return false;
  }
  return op->TryComplete();
}

int DelayedOperationPurgatory::CheckAndComplete(const DelayedOperationKey& key) {
  int completed = 0;
  for (const std::shared_ptr<DelayedOperation>& op : state_->WatchersOf(key)) {
    // Skipped without its lock: a completed operation may be the one whose
    // callbacks are running on this thread.
    if (op->completed_) continue;
    std::lock_guard<std::mutex> op_lock(op->mu_);
    if (!op->completed_ && op->TryComplete()) ++completed;
  }
  return completed;
}

int DelayedOperationPurgatory::CompleteWatchers(const DelayedOperationKey& key) {
  int handed = 0;
  for (std::shared_ptr<DelayedOperation>& op : state_->WatchersOf(key)) {
    if (op->completed_) continue;
    state_->Force(std::move(op), key.kind, false);
    ++handed;
  }
  return handed;
}

int DelayedOperationPurgatory::CompleteAll() {
  int completed = 0;
  for (const std::shared_ptr<DelayedOperation>& op :
       state_->Close(PurgatoryState::Mode::kCompletedAll)) {
    if (op->completed_) continue;
    std::lock_guard<std::mutex> op_lock(op->mu_);
    if (op->ForceComplete()) ++completed;
  }
  return completed;
}

void DelayedOperationPurgatory::Shutdown() {
  // Dropped here, outside the purgatory's lock: their destructors may free
  // what they hold.
  state_->Close(PurgatoryState::Mode::kShutDown);
}

size_t DelayedOperationPurgatory::Delayed() const {
  return state_->Delayed();
}

size_t DelayedOperationPurgatory::Watching(const DelayedOperationKey& key) const {
  return state_->Watching(key);
}

DelayedOperationStats DelayedOperationPurgatory::Stats(DelayedOperationKind kind) const {
  return state_->Stats(kind);
}

int64_t DelayedOperationPurgatory::ExpiryChecks() const {
  return state_->ExpiryChecks();
}

}  // namespace daruma
