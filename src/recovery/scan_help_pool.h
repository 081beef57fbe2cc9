// ScanHelpPool: lends a log dir's idle loading threads to the partitions
// still recovering.
//
// A dir's loading threads claim its partitions one at a time. With at least
// as many partitions as threads, each partition is recovered by one thread
// (LoadLogParams::recovery_threads), and a thread with no partition left to
// claim used to exit. After a crash one partition's large active segment
// usually dominates the dir (every broker also holds __consumer_offsets'
// 50 partitions, and often __transaction_state's): the other threads finished
// the small partitions in milliseconds and then left that segment to one
// thread. Now such a thread calls Serve() instead and scans parts of the
// pipelines registered here (the second part of a split segment, segments
// ahead of the fold) until the loader calls Close() once every partition is
// loaded.
//
// Contract:
//  * A SegmentScanPipeline built with a pool registers itself and
//    unregisters at the start of its Stop(), before it waits for the parts
//    helpers are running: a helper claims a part only under the pool's
//    mutex with the pipeline registered, so no helper touches a pipeline
//    after its Stop() returned.
//  * Lock order: the pool's mutex, then a pipeline's. A pipeline calls into
//    the pool only without its own mutex held.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <vector>

namespace daruma {

class SegmentScanPipeline;

class ScanHelpPool {
 public:
  ScanHelpPool() = default;
  ScanHelpPool(const ScanHelpPool&) = delete;
  ScanHelpPool& operator=(const ScanHelpPool&) = delete;

  void Register(SegmentScanPipeline* pipeline);
  void Unregister(SegmentScanPipeline* pipeline);
  // A registered pipeline may have a part to claim now (it took a scan,
  // which moves its window): wakes the helpers to look.
  void Notify();
  // Runs parts of registered pipelines, waiting while none is claimable,
  // until Close().
  void Serve();
  // No more partitions will register: every Serve() returns. Idempotent.
  void Close();

  // Parts run by Serve() in this process so far, by every pool (tests).
  static int64_t parts_helped() { return parts_helped_.load(); }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<SegmentScanPipeline*> pipelines_;  // guarded by mu_
  bool closed_ = false;                          // guarded by mu_
  static std::atomic<int64_t> parts_helped_;
};

}  // namespace daruma
