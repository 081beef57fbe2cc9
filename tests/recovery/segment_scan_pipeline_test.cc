// SegmentScanPipeline (segment_scan_pipeline.h): Take(i) returns scan i, in
// order, whichever thread ran it; `threads` counts the caller's thread, which
// scans while it would otherwise wait; the window bounds how far scans run
// ahead; Stop() abandons scans not taken; a one-thread pipeline takes help
// from a ScanHelpPool.
#include "recovery/segment_scan_pipeline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
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

// A one-thread pipeline with a ScanHelpPool (a dir with no thread to spare
// per partition): a loading thread with nothing left to claim scans its
// parts, within the window of the segment being taken and the next.
TEST(SegmentScanPipelineTest, AOneThreadPipelineTakesHelpFromThePool) {
  Recorder r;
  ScanHelpPool pool;
  SegmentScanPipeline pipeline(SleepyScans(6, &r), 1, &pool);
  // A helper's claims, made here by hand: scans 0 and 1, then none until
  // the caller takes scan 0.
  std::optional<size_t> first = pipeline.ClaimForHelper();
  std::optional<size_t> second = pipeline.ClaimForHelper();
  ASSERT_EQ(first, std::optional<size_t>(0));
  ASSERT_EQ(second, std::optional<size_t>(1));
  EXPECT_FALSE(pipeline.ClaimForHelper().has_value()) << "beyond the window";
  pipeline.RunForHelper(*first);
  EXPECT_EQ(pipeline.Take(0).next_offset, 0);
  EXPECT_EQ(pipeline.ClaimForHelper(), std::optional<size_t>(2));
  // Take(1) waits for the helper's scan 1 rather than running it again.
  std::thread helper([&] { pipeline.RunForHelper(*second); });
  EXPECT_EQ(pipeline.Take(1).next_offset, 1);
  helper.join();
  EXPECT_EQ(r.started.load(), 2) << "scan 2 is claimed, not run yet";
  // Take(2) waits for the helper's claim of scan 2, run on another thread.
  std::thread late([&] { pipeline.RunForHelper(2); });
  EXPECT_EQ(pipeline.Take(2).next_offset, 2);
  late.join();
  for (int i = 3; i < 6; ++i) EXPECT_EQ(pipeline.Take(size_t(i)).next_offset, i);
  EXPECT_EQ(r.started.load(), 6);
}

TEST(SegmentScanPipelineTest, AServingHelperScansAndAStoppedPipelineIsLeftAlone) {
  Recorder r;
  ScanHelpPool pool;
  const int64_t helped = ScanHelpPool::parts_helped();
  std::thread helper([&] { pool.Serve(); });
  {
    SegmentScanPipeline pipeline(SleepyScans(8, &r), 1, &pool);
    // The helper claims scan 0 or 1 as soon as the pipeline registers.
    for (int i = 0; i < 5000 && r.started.load() == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_GT(r.started.load(), 0) << "the helper never claimed a scan";
    for (int i = 0; i < 4; ++i) EXPECT_EQ(pipeline.Take(size_t(i)).next_offset, i);
    pipeline.Stop();
  }
  const int started = r.started.load();
  EXPECT_LE(started, 4 + 2) << "the window: the scan being taken and the next";
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(r.started.load(), started) << "nothing starts after Stop";
  pool.Close();
  helper.join();
  EXPECT_GT(ScanHelpPool::parts_helped(), helped);
}

TEST(SegmentScanPipelineTest, ServeReturnsOnceClosedWithNothingRegistered) {
  ScanHelpPool pool;
  std::thread helper([&] { pool.Serve(); });
  pool.Close();
  helper.join();
  pool.Serve();  // closed: returns at once
}

}  // namespace
}  // namespace daruma
