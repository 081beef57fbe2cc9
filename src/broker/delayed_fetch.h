// DelayedFetchPurgatory: Fetch requests parked until enough data arrives
// (Kafka's DelayedFetch in the fetch purgatory, spec §5.5 step 5), on the
// generic purgatory (common/delayed_operation.h).
//
// A parked fetch is an `Attempt`: a callable that re-evaluates the fetch and
// returns true once it has responded. The purgatory calls it with
// force == false when one of the fetch's partitions got new data (Wake) and
// with force == true when the fetch's max wait expires or the purgatory
// completes everything (CompleteAll, at shutdown); a forced attempt must
// respond with whatever is available (possibly nothing) and return true.
//
// Guarantees (whatever threads call in; the generic purgatory's):
// - An Attempt never runs twice at once, and after one returned true (or was
//   forced) it never runs again: each fetch responds exactly once.
// - No lost wake-up: Park watches the partitions first and then tries once
//   more (Kafka's tryCompleteElseWatch), so data appended between the
//   handler's first try and Park is seen.
// - After CompleteAll, Park forces the attempt at once (nothing waits out its
//   max wait during shutdown).
// - A fetch parked for a client that is gone (ClientScope::gone, see
//   frame_handler.h) is forced by CompleteFor(client), or at once by Park if
//   the client was already gone. CompleteFor sets nothing itself, the caller
//   sets `gone` first; Park watches the client's key and then reads `gone`
//   again, so either CompleteFor finds the fetch among the key's watchers or
//   Park sees `gone` and forces it.
//
// Time: a max wait is judged on the scheduler's clock; the expiry runs as a
// scheduler job, which hands the forced attempt to `run_forced` (which posts
// it to the request pool), so no disk read runs on the scheduler's or the
// network thread. CompleteFor hands its forced attempts there too.
// (`run_forced` is a plain function, not an Asio executor, so that the
// request handlers, which all include this header, need not parse Asio.)
//
// Threading: Park, Wake, CompleteAll and CompleteFor may be called from any
// thread; the attempts run on the caller's thread (Wake: the producing
// request thread; CompleteAll: the caller's), except an expiry or a
// CompleteFor (run_forced). Destroy the purgatory before `scheduler` and
// only after what `run_forced` posts to has drained (it may hold forced
// attempts).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <vector>

#include "broker/frame_handler.h"
#include "common/delayed_operation.h"
#include "common/scheduler.h"
#include "log/topic_partition.h"

namespace daruma::broker {

class DelayedFetchPurgatory {
 public:
  using Attempt = std::function<bool(bool force)>;

  DelayedFetchPurgatory(Scheduler* scheduler, DelayedOperationPurgatory::Runner run_forced);
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
  size_t parked() const { return purgatory_.Delayed(); }
  // Fetches forced while their client was gone (for /metrics): by
  // CompleteFor, by Park for a client already gone, or by an expiry that
  // came first.
  int64_t completed_for_gone_clients() const { return completed_for_gone_.load(); }
  DelayedOperationStats stats() const {
    return purgatory_.Stats(DelayedOperationKind::kFetchPartition);
  }

 private:
  DelayedOperationPurgatory purgatory_;
  std::atomic<int64_t> completed_for_gone_{0};
};

}  // namespace daruma::broker
