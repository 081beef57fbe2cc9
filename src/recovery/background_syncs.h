// BackgroundSyncs: the fsyncs of one partition's recovery, run off the
// loading thread so that they overlap the scans of later segments.
//
// Why: the loading thread applies segment scans in order (log_loader.h), and
// with spare recovery threads everything it does that is not a scan is the
// serial part of recovering one partition. An fsync costs the loading thread
// no CPU but a device cache flush each (0.1 ms on an idle disk, 4-8 ms on a
// busy one), so a per-segment fsync on the loading thread can make it, not
// the scans, the bottleneck; several fsyncs in flight at once also share one
// device flush.
//
// Contract:
//  * max_in_flight == 0: Run() runs the job on the caller's thread and returns
//    its status (the one-thread load stays on one thread, in the same order).
//  * max_in_flight > 0: Run() starts the job on a thread of its own and
//    returns Ok, after first waiting for the oldest job if max_in_flight are
//    running. A job's error is returned by the next Run() or Wait() (the
//    first error only; later jobs still run).
//  * A job may only touch files and objects the caller leaves alone (or only
//    reads) until Wait() returned; the destructor waits too, so nothing a job
//    uses may be destroyed before this object.
//  * Durability: nothing is known to be durable before Wait() returned Ok.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <future>

#include "common/status.h"

namespace daruma {

class BackgroundSyncs {
 public:
  explicit BackgroundSyncs(size_t max_in_flight) : max_in_flight_(max_in_flight) {}
  ~BackgroundSyncs();  // Wait(), ignoring errors
  BackgroundSyncs(const BackgroundSyncs&) = delete;
  BackgroundSyncs& operator=(const BackgroundSyncs&) = delete;

  Status Run(std::function<Status()> job);
  // Waits for every job started; the first error of any job.
  Status Wait();

 private:
  void WaitForOldest();

  size_t max_in_flight_;
  std::deque<std::future<Status>> in_flight_;
  Status first_error_;
};

}  // namespace daruma
