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
//  * Only the parts of the `window` segments after the last one taken are
//    scanned (done or running), which bounds memory to a few segments'
//    retained batches.
//  * `threads` counts the caller's: threads - 1 helpers scan ahead, and
//    Take() scans the next unclaimed part on the caller's thread rather
//    than wait for a helper, so all threads stay busy and none competes with
//    the fold for a core. With threads <= 1 and no pool no thread is
//    started: Take(i) scans segment i, so the one-thread path is exactly a
//    sequential scan.
//  * With threads > 1, the last LogSegment of SplitSegmentScan::kMinSplitBytes
//    or more is scanned in two parts, which the threads claim like any scan,
//    and Take() joins them (log/segment_scan_split.h): a segment per thread
//    left one thread idle while the other scanned the last segment, the
//    only one scanned after most crashes.
//  * With threads <= 1 and a ScanHelpPool (a dir with no thread to spare
//    per partition), the last segment large enough is split too, and a
//    pipeline of more than one part registers with the pool until Stop(): a
//    loading thread with no partition left scans its parts, within a window
//    of two segments. Without help the caller scans the parts in order and
//    joins them, as above. A split costs its second part's marks (16 bytes
//    per batch, bounded: segment_scan_split.h) whether or not help comes.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "log/log_segment.h"
#include "log/segment_recovery_scan.h"
#include "log/segment_scan_split.h"
#include "recovery/scan_help_pool.h"

namespace daruma {

class SegmentScanPipeline {
 public:
  using Scan = std::function<SegmentRecoveryScan()>;

  SegmentScanPipeline(std::vector<Scan> scans, int threads, ScanHelpPool* help = nullptr);
  // The segments' ScanForRecovery (in parts, see above). `segments` are
  // consecutive (each one's next segment is the one after it in the vector,
  // the last one's is none): each scan checks its offsets against the next
  // segment's base offset.
  SegmentScanPipeline(const std::vector<const LogSegment*>& segments, int threads,
                      ScanHelpPool* help = nullptr);
  ~SegmentScanPipeline();  // Stop()
  SegmentScanPipeline(const SegmentScanPipeline&) = delete;
  SegmentScanPipeline& operator=(const SegmentScanPipeline&) = delete;

  // The scan of segment i (i counts up from 0 by one per call); blocks until
  // it is done. A split segment's parts are joined on the caller's thread.
  SegmentRecoveryScan Take(size_t i);
  // Abandons scans not taken yet, joins the threads and waits for the
  // parts helpers run. Idempotent.
  void Stop();

  // A helper's claim, under the pool's mutex (ScanHelpPool::Serve): the
  // next claimable part, which the helper must then run (RunForHelper).
  std::optional<size_t> ClaimForHelper();
  void RunForHelper(size_t part);

 private:
  using Part = std::function<SegmentScanPart()>;
  // Scan i: parts_[first, first + count), and their join when split.
  struct Job {
    size_t first = 0;
    size_t count = 1;
    std::unique_ptr<SplitSegmentScan> split;
  };

  explicit SegmentScanPipeline(int threads);
  void Start(int threads, ScanHelpPool* help);
  void Work();
  // With mu_ held: a part is left to claim within the window.
  bool CanClaimLocked() const;
  // Claims the next part, runs it without mu_ and stores its result.
  void ScanNextLocked(std::unique_lock<std::mutex>& l);
  bool JobDoneLocked(const Job& job) const;

  std::vector<Part> parts_;
  std::vector<Job> jobs_;
  size_t window_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::optional<SegmentScanPart>> done_;  // by part
  std::vector<size_t> job_of_part_;
  size_t next_to_scan_ = 0;  // a part
  size_t taken_ = 0;         // jobs
  bool stopping_ = false;
  std::vector<std::thread> threads_;
  ScanHelpPool* help_ = nullptr;  // registered with while not stopped
  size_t helping_ = 0;            // parts helpers claimed and have not stored
};

}  // namespace daruma
