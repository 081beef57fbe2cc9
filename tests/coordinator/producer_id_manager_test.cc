// ProducerIdManager: ids are unique within a run and across restarts, start
// above the caller's floor and every dir's file, and a failed or corrupt file
// never lets an id be handed out twice.
#include "coordinator/producer_id_manager.h"

#include <gtest/gtest.h>

#include <set>

#include "common/bytes.h"
#include "support/fault_injection_file_system.h"
#include "support/mem_file_system.h"

namespace daruma::testing {
namespace {

constexpr char kDir[] = "/data/a";
constexpr char kOtherDir[] = "/data/b";

class ProducerIdManagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(fs_.CreateDir("/data").ok());
    ASSERT_TRUE(fs_.CreateDir(kDir).ok());
    ASSERT_TRUE(fs_.CreateDir(kOtherDir).ok());
  }
  std::unique_ptr<ProducerIdManager> Open(int64_t first_free = 0, int32_t block = 3,
                                          FileSystem* fs = nullptr) {
    auto m = ProducerIdManager::Open(fs != nullptr ? fs : &fs_, kDir, {kDir, kOtherDir}, first_free,
                                     block);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(*m) : nullptr;
  }
  void WriteFile(const std::string& dir, const std::string& content) {
    ASSERT_TRUE(
        fs_.WriteFileAtomically(JoinPath(dir, ProducerIdManager::kFileName), AsBytes(content))
            .ok());
  }
  MemFileSystem fs_;
};

TEST_F(ProducerIdManagerTest, IdsAreConsecutiveAndTheBlockEndIsDurableFirst) {
  auto m = Open();
  for (int64_t want = 0; want < 7; ++want) {
    auto id = m->Generate();
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    EXPECT_EQ(*id, want);
  }
  // Ids 6.. came from the third block of 3: the file says 9.
  auto content = fs_.ReadFile(JoinPath(kDir, ProducerIdManager::kFileName));
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(std::string(AsStringView(*content)), ProducerIdManager::Serialize(9));
}

TEST_F(ProducerIdManagerTest, ARestartSkipsTheRestOfTheBlock) {
  {
    auto m = Open();
    ASSERT_TRUE(m->Generate().ok());  // 0, block [0, 3) reserved
  }
  auto m = Open();
  auto id = m->Generate();
  ASSERT_TRUE(id.ok());
  EXPECT_EQ(*id, 3);
}

TEST_F(ProducerIdManagerTest, StartsAboveTheLogsLargestProducerIdAndEveryDirsFile) {
  EXPECT_EQ(*Open(/*first_free=*/42)->Generate(), 42);
  WriteFile(kOtherDir, ProducerIdManager::Serialize(5000));
  EXPECT_EQ(*Open(/*first_free=*/42)->Generate(), 5000);
  EXPECT_EQ(*Open(/*first_free=*/6000)->Generate(), 6000);
}

TEST_F(ProducerIdManagerTest, ARaisedFloorIsNeverUndercutAndOutlivesARestart) {
  auto m = Open();
  EXPECT_EQ(*m->Generate(), 0);  // block [0, 3) reserved
  m->RaiseFloor(500);
  EXPECT_EQ(*m->Generate(), 500);  // past the block: [500, 503) made durable first
  m->RaiseFloor(10);               // lower: no effect
  EXPECT_EQ(*m->Generate(), 501);
  auto content = fs_.ReadFile(JoinPath(kDir, ProducerIdManager::kFileName));
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(std::string(AsStringView(*content)), ProducerIdManager::Serialize(503));
  EXPECT_EQ(*Open()->Generate(), 503);
  // Within a reserved block the floor skips ids without a write.
  auto n = Open(/*first_free=*/1000, /*block=*/100);
  EXPECT_EQ(*n->Generate(), 1000);
  n->RaiseFloor(1050);
  EXPECT_EQ(*n->Generate(), 1050);
  // A floor still to be learned is waited for.
  n->ExpectFloor();
  EXPECT_FALSE(n->floor_known());
  n->RaiseFloor(0);
  EXPECT_TRUE(n->floor_known());
}

// A floor from elsewhere (Kafka's metadata, read once) outlives a restart
// that comes before any id was handed out.
TEST_F(ProducerIdManagerTest, AFloorAboveEveryFileIsDurableAtOpen) {
  ASSERT_NE(Open(/*first_free=*/7000), nullptr);
  auto content = fs_.ReadFile(JoinPath(kDir, ProducerIdManager::kFileName));
  ASSERT_TRUE(content.ok());
  EXPECT_EQ(std::string(AsStringView(*content)), ProducerIdManager::Serialize(7000));
  EXPECT_EQ(*Open()->Generate(), 7000);
}

TEST_F(ProducerIdManagerTest, ACorruptFileIsRefusedNamingIt) {
  for (const std::string bad :
       {"", "{", "[]", "{\"version\":0}", "{\"version\":1,\"nextBlockStartId\":5}",
        "{\"version\":0,\"nextBlockStartId\":-2}", "{\"version\":0,\"nextBlockStartId\":\"7\"}"}) {
    WriteFile(kOtherDir, bad);
    auto m = ProducerIdManager::Open(&fs_, kDir, {kDir, kOtherDir}, 0, 3);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_TRUE(m.status().IsCorruption()) << m.status().ToString();
    EXPECT_NE(m.status().message().find(JoinPath(kOtherDir, ProducerIdManager::kFileName)),
              std::string::npos)
        << m.status().ToString();
  }
}

TEST_F(ProducerIdManagerTest, AFailedReservationHandsOutNothingAndTheNextCallRetries) {
  FaultInjectionFileSystem faulty(&fs_);
  auto m = Open(0, 3, &faulty);
  faulty.FailAt(faulty.op_count() + 1, InjectedError::kEnospc);
  auto failed = m->Generate();
  ASSERT_FALSE(failed.ok());
  EXPECT_NE(failed.status().message().find(ProducerIdManager::kFileName), std::string::npos)
      << failed.status().ToString();
  auto id = m->Generate();
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  EXPECT_EQ(*id, 0);
}

}  // namespace
}  // namespace daruma::testing
