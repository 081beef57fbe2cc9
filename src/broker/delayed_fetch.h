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
// Threading: every method, and every Attempt, runs on `executor`, which must
// be serial (a strand or a one-thread io_context): the purgatory has no lock.
// Timers are asio::steady_timer on that executor.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "log/topic_partition.h"

namespace daruma::broker {

class DelayedFetchPurgatory {
 public:
  using Attempt = std::function<bool(bool force)>;

  explicit DelayedFetchPurgatory(asio::any_io_executor executor);
  ~DelayedFetchPurgatory();
  DelayedFetchPurgatory(const DelayedFetchPurgatory&) = delete;
  DelayedFetchPurgatory& operator=(const DelayedFetchPurgatory&) = delete;

  // Parks `attempt` until a Wake of one of `partitions` completes it or
  // `max_wait` passes (then it is forced).
  void Park(const std::vector<TopicPartition>& partitions, std::chrono::milliseconds max_wait,
            Attempt attempt);
  // Re-evaluates every fetch parked on `tp` (called after an append to it).
  void Wake(const TopicPartition& tp);
  // Forces every parked fetch now (shutdown).
  void CompleteAll();
  size_t parked() const { return ops_.size(); }

 private:
  struct Op {
    std::vector<TopicPartition> partitions;
    Attempt attempt;
    std::unique_ptr<asio::steady_timer> timer;
  };
  // Removes a parked op from every index; returns it (nullptr if already gone).
  std::shared_ptr<Op> Remove(uint64_t id);
  void Expire(uint64_t id);

  asio::any_io_executor executor_;
  uint64_t next_id_ = 0;
  std::map<uint64_t, std::shared_ptr<Op>> ops_;
  std::map<TopicPartition, std::set<uint64_t>> by_partition_;
};

}  // namespace daruma::broker
