// SegmentScanPipeline (segment_scan_pipeline.h): Take(i) returns scan i, in
// order, whichever thread ran it; `threads` counts the caller's thread, which
// scans while it would otherwise wait; the window bounds how far scans run
// ahead; Stop() abandons scans not taken.
#include "recovery/segment_scan_pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

namespace daruma {
namespace {

struct Recorder {
  std::mutex mu;
  std::set<std::thread::id> threads;
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  std::atomic<int> started{0};
};

// Scan i reports i as its next_offset after a short sleep.
std::vector<SegmentScanPipeline::Scan> SleepyScans(int n, Recorder* r) {
  std::vector<SegmentScanPipeline::Scan> scans;
  for (int i = 0; i < n; ++i) {
    scans.push_back([i, r] {
      ++r->started;
      const int now = ++r->running;
      int seen = r->max_running.load();
      while (now > seen && !r->max_running.compare_exchange_weak(seen, now)) {
      }
      {
        std::lock_guard<std::mutex> l(r->mu);
        r->threads.insert(std::this_thread::get_id());
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      --r->running;
      SegmentRecoveryScan scan;
      scan.next_offset = i;
      return scan;
    });
  }
  return scans;
}

TEST(SegmentScanPipelineTest, TakesEveryScanInOrderOnTheCallerAndItsHelpers) {
  for (int threads : {1, 2, 3}) {
    Recorder r;
    SegmentScanPipeline pipeline(SleepyScans(12, &r), threads);
    for (int i = 0; i < 12; ++i) EXPECT_EQ(pipeline.Take(size_t(i)).next_offset, i);
    EXPECT_EQ(r.started.load(), 12);
    EXPECT_LE(r.max_running.load(), threads) << "threads counts the caller's";
    EXPECT_LE(int(r.threads.size()), threads);
    if (threads == 1) {
      EXPECT_EQ(r.threads, std::set<std::thread::id>{std::this_thread::get_id()});
    } else {
      EXPECT_EQ(r.threads.count(std::this_thread::get_id()), 1u)
          << "the caller scans instead of waiting";
    }
  }
}

TEST(SegmentScanPipelineTest, StopAbandonsScansNotTakenWithinTheWindow) {
  Recorder r;
  SegmentScanPipeline pipeline(SleepyScans(40, &r), 2);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(pipeline.Take(size_t(i)).next_offset, i);
  pipeline.Stop();
  const int started = r.started.load();
  EXPECT_LE(started, 3 + 3) << "at most the window (threads + 1) beyond the last taken";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(r.started.load(), started) << "nothing starts after Stop";
}

}  // namespace
}  // namespace daruma
