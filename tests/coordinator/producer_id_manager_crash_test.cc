// A power loss at every step of reserving producer id blocks: whatever the
// step, a manager reopened on what survived hands out only ids above every id
// returned before the crash (an id is never handed out twice).
#include <gtest/gtest.h>

#include <vector>

#include "coordinator/producer_id_manager.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"

namespace daruma::testing {
namespace {

constexpr char kDir[] = "/data/a";
constexpr int kIds = 7;  // three blocks of 3

TEST(ProducerIdManagerCrashTest, NoIdIsReusedAfterACrashAtAnyStep) {
  // Count the mutating operations of a run without a crash.
  uint64_t total_ops = 0;
  {
    MemFileSystem base;
    ASSERT_TRUE(base.CreateDir("/data").ok());
    ASSERT_TRUE(base.CreateDir(kDir).ok());
    FaultInjectionFileSystem fs(&base);
    auto m = ProducerIdManager::Open(&fs, kDir, {kDir}, 0, 3);
    ASSERT_TRUE(m.ok());
    for (int i = 0; i < kIds; ++i) ASSERT_TRUE((*m)->Generate().ok());
    total_ops = fs.op_count();
  }
  ASSERT_GT(total_ops, 0u);
  for (uint64_t crash_at = 1; crash_at <= total_ops; ++crash_at) {
    SCOPED_TRACE("crash at op " + std::to_string(crash_at));
    MemFileSystem base;
    ASSERT_TRUE(base.CreateDir("/data").ok());
    ASSERT_TRUE(base.CreateDir(kDir).ok());
    FaultInjectionFileSystem fs(&base);
    fs.CrashAt(crash_at);
    std::vector<int64_t> returned;
    {
      auto m = ProducerIdManager::Open(&fs, kDir, {kDir}, 0, 3);
      ASSERT_TRUE(m.ok());
      for (int i = 0; i < kIds; ++i) {
        auto id = (*m)->Generate();
        if (!id.ok()) break;
        returned.push_back(*id);
      }
    }
    ASSERT_TRUE(fs.crashed());
    MemFileSystem image;
    ASSERT_TRUE(fs.MaterializeDurableState(&image, "/data", /*tear=*/false).ok());
    auto reopened = ProducerIdManager::Open(&image, kDir, {kDir}, 0, 3);
    ASSERT_TRUE(reopened.ok()) << reopened.status().ToString();
    auto next = (*reopened)->Generate();
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    for (int64_t id : returned) EXPECT_GT(*next, id);
  }
}

}  // namespace
}  // namespace daruma::testing
