// BackgroundSyncs (recovery/background_syncs.h): inline with no threads,
// bounded in flight otherwise, every job run, the first error reported.
#include "recovery/background_syncs.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace daruma {
namespace {

TEST(BackgroundSyncsTest, InlineRunsEachJobAtOnceOnTheCallersThread) {
  BackgroundSyncs syncs(0);
  const std::thread::id caller = std::this_thread::get_id();
  std::vector<int> order;
  Status st = syncs.Run([&] {
    EXPECT_EQ(std::this_thread::get_id(), caller);
    order.push_back(1);
    return Status::Ok();
  });
  EXPECT_TRUE(st.ok());
  EXPECT_EQ(order, std::vector<int>{1});
  st = syncs.Run([&] {
    order.push_back(2);
    return Status::IoError("sync of f failed");
  });
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_EQ(st.message(), "sync of f failed");
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(BackgroundSyncsTest, RunsEveryJobWithAtMostMaxInFlightAtOnce) {
  std::atomic<int> running{0}, peak{0}, done{0};
  {
    BackgroundSyncs syncs(2);
    for (int i = 0; i < 8; ++i) {
      Status st = syncs.Run([&] {
        const int now = ++running;
        int seen = peak.load();
        while (now > seen && !peak.compare_exchange_weak(seen, now)) {
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        --running;
        ++done;
        return Status::Ok();
      });
      EXPECT_TRUE(st.ok());
    }
    EXPECT_TRUE(syncs.Wait().ok());
    EXPECT_EQ(done.load(), 8);
  }
  EXPECT_EQ(peak.load(), 2);
}

TEST(BackgroundSyncsTest, WaitReturnsTheFirstErrorAndStillRunsLaterJobs) {
  std::atomic<int> done{0};
  BackgroundSyncs syncs(1);  // one in flight: jobs finish in the order started
  for (int i = 0; i < 4; ++i) {
    (void)syncs.Run([&, i] {
      ++done;
      return i == 1 || i == 2 ? Status::IoError("job " + std::to_string(i)) : Status::Ok();
    });
  }
  Status st = syncs.Wait();
  EXPECT_EQ(st.code(), StatusCode::kIoError);
  EXPECT_EQ(st.message(), "job 1");
  EXPECT_EQ(done.load(), 4);
  // Reported again, not forgotten.
  EXPECT_EQ(syncs.Wait().message(), "job 1");
}

TEST(BackgroundSyncsTest, DestructorWaitsForJobsStillRunning) {
  std::atomic<bool> finished{false};
  {
    BackgroundSyncs syncs(4);
    (void)syncs.Run([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      finished = true;
      return Status::Ok();
    });
  }
  EXPECT_TRUE(finished.load());
}

}  // namespace
}  // namespace daruma
