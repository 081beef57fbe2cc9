// SegmentScanPipeline: runs the read-only half of segment recovery
// (segment_recovery_scan.h) for the segments of one partition on a few
// threads, ahead of the sequential fold that applies them in segment order.
//
// Contract:
//  * The caller hands over the scans to run (a segment's ScanForRecovery, or
//    a scan of its .log file), in the order it will Take() them. A segment
//    must not be written, truncated, renamed or closed while the pipeline may
//    still scan it: the caller only modifies segment i after Take(i)
//    returned, and calls Stop() before touching any segment it has not taken
//    yet (deleting later segments, splitting one).
//  * At most `window` scans are held (done or running) beyond the last one
//    taken, which bounds memory to a few segments' retained batches.
//  * `threads` counts the caller's: threads - 1 helpers scan ahead, and
//    Take() scans the next unclaimed segment on the caller's thread rather
//    than wait for a helper, so all threads stay busy and none competes with
//    the fold for a core. With threads <= 1 no thread is started: Take(i)
//    scans segment i, so the one-thread path is exactly a sequential scan.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "log/log_segment.h"
#include "log/segment_recovery_scan.h"

namespace daruma {

class SegmentScanPipeline {
 public:
  using Scan = std::function<SegmentRecoveryScan()>;

  SegmentScanPipeline(std::vector<Scan> scans, int threads);
  // The segments' ScanForRecovery. `segments` are consecutive (each one's
  // next segment is the one after it in the vector, the last one's is none):
  // each scan checks its offsets against the next segment's base offset.
  SegmentScanPipeline(const std::vector<const LogSegment*>& segments, int threads);
  ~SegmentScanPipeline();  // Stop()
  SegmentScanPipeline(const SegmentScanPipeline&) = delete;
  SegmentScanPipeline& operator=(const SegmentScanPipeline&) = delete;

  // The scan of segment i (i counts up from 0 by one per call); blocks until
  // it is done.
  SegmentRecoveryScan Take(size_t i);
  // Abandons scans not taken yet and joins the threads. Idempotent.
  void Stop();

 private:
  void Work();
  // With mu_ held: a scan is left to claim within the window.
  bool CanClaimLocked() const;
  // Claims the next scan, runs it without mu_ and stores its result.
  void ScanNextLocked(std::unique_lock<std::mutex>& l);

  std::vector<Scan> scans_;
  size_t window_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::optional<SegmentRecoveryScan>> done_;
  size_t next_to_scan_ = 0;
  size_t taken_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace daruma
