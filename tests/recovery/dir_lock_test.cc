// DirLock against both kinds of holder: another Daruma (flock) and a Kafka
// broker (a POSIX record lock, held here by a child process).
#include "recovery/dir_lock.h"

#include <gtest/gtest.h>

#include "common/file_system.h"
#include "support/record_lock_holder.h"
#include "support/test_support.h"

namespace daruma {
namespace {

using testing::KafkaCouldLock;
using testing::RecordLockHolder;
using testing::TempDir;

TEST(DirLockTest, SecondAcquireInTheSameProcessIsRefused) {
  TempDir tmp;
  auto first = DirLock::Acquire(tmp.path());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  auto second = DirLock::Acquire(tmp.path());
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(DirLock::IsHeldElsewhere(second.status()));
}

TEST(DirLockTest, KafkaBrokerLockIsRefusedNamingTheLockAndTheProcess) {
  TempDir tmp;
  const std::string lock_file = tmp.Join(".lock");
  RecordLockHolder kafka(lock_file);
  ASSERT_TRUE(kafka.holding());
  auto lock = DirLock::Acquire(tmp.path());
  ASSERT_FALSE(lock.ok());
  EXPECT_TRUE(lock.status().IsIoError());
  EXPECT_TRUE(DirLock::IsHeldElsewhere(lock.status()));
  EXPECT_NE(lock.status().message().find(lock_file + " is held by process " +
                                         std::to_string(kafka.pid())),
            std::string::npos)
      << lock.status().message();
}

TEST(DirLockTest, KafkaCannotLockADirDarumaHolds) {
  TempDir tmp;
  {
    auto lock = DirLock::Acquire(tmp.path());
    ASSERT_TRUE(lock.ok());
    EXPECT_FALSE(KafkaCouldLock(tmp.Join(".lock")));
  }
  EXPECT_TRUE(KafkaCouldLock(tmp.Join(".lock")));  // released
}

TEST(DirLockTest, CheckNotHeldSeesKafkaAndChangesNothing) {
  TempDir tmp;
  EXPECT_TRUE(DirLock::CheckNotHeld(tmp.path()).ok());
  EXPECT_FALSE(FileSystem::Default()->Exists(tmp.Join(".lock")));  // not created
  {
    RecordLockHolder kafka(tmp.Join(".lock"));
    ASSERT_TRUE(kafka.holding());
    Status st = DirLock::CheckNotHeld(tmp.path());
    EXPECT_TRUE(DirLock::IsHeldElsewhere(st)) << st.ToString();
    EXPECT_NE(st.message().find(tmp.Join(".lock")), std::string::npos) << st.message();
  }
  EXPECT_TRUE(DirLock::CheckNotHeld(tmp.path()).ok());  // the broker stopped
  EXPECT_TRUE(KafkaCouldLock(tmp.Join(".lock")));       // and the probe holds nothing
}

TEST(DirLockTest, CheckNotHeldSeesAnotherDaruma) {
  TempDir tmp;
  auto lock = DirLock::Acquire(tmp.path());
  ASSERT_TRUE(lock.ok());
  Status st = DirLock::CheckNotHeld(tmp.path());
  EXPECT_TRUE(DirLock::IsHeldElsewhere(st)) << st.ToString();
  EXPECT_NE(st.message().find(tmp.Join(".lock") + " is held by another Daruma process"),
            std::string::npos)
      << st.message();
}

}  // namespace
}  // namespace daruma
