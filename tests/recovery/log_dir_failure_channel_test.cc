// LogDirFailureChannel: the first I/O error of a dir takes it offline and is
// told to the listener once; running out of descriptors takes nothing
// offline.
#include "recovery/log_dir_failure_channel.h"

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "common/file_system.h"

namespace daruma {
namespace {

TEST(LogDirFailureChannelTest, TheListenerHearsOfEachDirOnceWithItsFirstError) {
  LogDirFailureChannel channel;
  std::vector<std::pair<std::string, std::string>> heard;
  channel.SetListener([&](const std::string& dir, const Status& error) {
    // Called without the channel's lock: it may ask the channel.
    EXPECT_TRUE(channel.IsOffline(dir));
    heard.emplace_back(dir, error.message());
  });
  EXPECT_TRUE(channel.MaybeAddOfflineLogDir("/a", Status::IoError("ENOSPC")));
  EXPECT_FALSE(channel.MaybeAddOfflineLogDir("/a", Status::IoError("EIO later")));
  EXPECT_TRUE(channel.MaybeAddOfflineLogDir("/b", Status::IoError("EIO")));
  EXPECT_EQ(heard,
            (std::vector<std::pair<std::string, std::string>>{{"/a", "ENOSPC"}, {"/b", "EIO"}}));
  EXPECT_EQ(channel.ErrorFor("/a").message(), "ENOSPC");
  EXPECT_EQ(channel.OfflineDirs().size(), 2u);
}

TEST(LogDirFailureChannelTest, RunningOutOfDescriptorsTakesNoDirOffline) {
  LogDirFailureChannel channel;
  int calls = 0;
  channel.SetListener([&](const std::string&, const Status&) { ++calls; });
  const Status emfile =
      Status::IoError("open: Too many open files").WithDetail(kTooManyOpenFilesDetail);
  EXPECT_FALSE(channel.MaybeAddOfflineLogDir("/a", emfile));
  EXPECT_FALSE(channel.IsOffline("/a"));
  EXPECT_EQ(calls, 0);
}

}  // namespace
}  // namespace daruma
