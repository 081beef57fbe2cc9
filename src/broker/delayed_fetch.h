// DelayedFetchPurgatory: Fetch requests parked until enough data arrives
// (Kafka's DelayedFetch in the fetch purgatory, spec §5.5 step 5).
//
// A parked fetch is an `Attempt`: a callable that re-evaluates the fetch and
// returns true once it has responded. The purgatory calls it with
// force == false when one of the fetch's partitions got new data (Wake) and
// with force == true when the fetch's max wait expires or the purgatory
// completes everything (CompleteAll, at shutdown); a forced attempt must
// respond with whatever is available (possibly nothing) and return true.
//
// Guarantees (whatever threads call in):
// - An Attempt never runs twice at once, and after one returned true (or was
//   forced) it never runs again: each fetch responds exactly once.
// - No lost wake-up: Park watches the partitions first and then tries once
//   more (Kafka's tryCompleteElseWatch), so data appended between the
//   handler's first try and Park is seen.
// - After CompleteAll, Park forces the attempt at once (nothing waits out its
//   max wait during shutdown).
// - A fetch parked for a client that is gone (ClientScope::gone, see
//   frame_handler.h) is forced by CompleteFor(client), or at once by Park if
//   the client was already gone: CompleteFor sets nothing itself, the caller
//   sets `gone` first, so either CompleteFor finds the op in the index or
//   Park (which checks `gone` under the same lock it indexes under) sees it.
//
// Threading: Park, Wake and CompleteAll may be called from any thread; the
// attempts run on the caller's thread (Wake: the producing request thread),
// except an expiry or a CompleteFor, which the timer (on `timer_executor`, the network
// io_context) hands to `work_executor` (the request pool) so no disk read runs
// on the network thread. Timers are only touched on `timer_executor`.
// Destroy the purgatory only after `work_executor` has drained (it may hold
// expiry work pointing here) and before `timer_executor`'s io_context.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <vector>

#include "broker/frame_handler.h"
#include "log/topic_partition.h"

namespace daruma::broker {

class DelayedFetchPurgatory {
 public:
  using Attempt = std::function<bool(bool force)>;

  DelayedFetchPurgatory(asio::any_io_executor timer_executor, asio::any_io_executor work_executor);
  ~DelayedFetchPurgatory();
  DelayedFetchPurgatory(const DelayedFetchPurgatory&) = delete;
  DelayedFetchPurgatory& operator=(const DelayedFetchPurgatory&) = delete;

  // Watches `partitions` for `attempt`, then tries it once more; it stays
  // parked until a Wake of one of them completes it or `max_wait` passes
  // (then it is forced).
  // `client` (may be null) is the connection the fetch came from.
  void Park(const std::vector<TopicPartition>& partitions, std::chrono::milliseconds max_wait,
            ClientScopePtr client, Attempt attempt);
  // Re-evaluates every fetch parked on `tp` (called after an append to it).
  void Wake(const TopicPartition& tp);
  // Forces every parked fetch now, and every later Park at once (shutdown).
  void CompleteAll();
  // Forces, on the work executor, every fetch parked for `client` (whose
  // `gone` is already set). Safe from the network thread: no disk read here.
  void CompleteFor(const ClientScopePtr& client);
  size_t parked() const;
  // Fetches forced because their client went away (for /metrics).
  int64_t completed_for_gone_clients() const { return completed_for_gone_.load(); }

 private:
  struct Op;
  // Runs the attempt unless the op is done; true when the op is done now.
  bool TryComplete(const std::shared_ptr<Op>& op);
  void ForceComplete(const std::shared_ptr<Op>& op);
  // Removes a parked op from both indexes (no-op if already gone).
  void Unwatch(const Op& op);
  void ArmTimer(const std::shared_ptr<Op>& op, std::chrono::milliseconds max_wait);

  asio::any_io_executor timer_executor_;
  asio::any_io_executor work_executor_;
  // Guards the indexes and closed_. Never held while an attempt runs; lock
  // order: an Op's mu -> mu_.
  mutable std::mutex mu_;
  uint64_t next_id_ = 0;
  bool closed_ = false;  // CompleteAll ran
  std::map<uint64_t, std::shared_ptr<Op>> ops_;
  std::map<TopicPartition, std::set<uint64_t>> by_partition_;
  std::map<const ClientScope*, std::set<uint64_t>> by_client_;
  std::atomic<int64_t> completed_for_gone_{0};
};

}  // namespace daruma::broker
