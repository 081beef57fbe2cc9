// ReadAheadFileSystem (recovery/read_ahead_file_system.h): WillNeed runs
// ahead of the reader within the window, covers every segment byte once, and
// a second reader can follow the first.
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "common/forwarding_file_system.h"
#include "recovery/read_ahead_file_system.h"
#include "support/mem_file_system.h"

namespace daruma {
namespace {

// Records every WillNeed as (path, pos, len).
class AdviceLog : public ForwardingFileSystem {
 public:
  using ForwardingFileSystem::ForwardingFileSystem;
  struct Advice {
    std::string path;
    uint64_t pos, len;
  };
  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    DARUMA_ASSIGN_OR_RETURN(auto file, base()->Open(path, mode));
    return std::unique_ptr<File>(std::make_unique<Recording>(std::move(file), this));
  }
  std::vector<Advice> advice() {
    std::lock_guard<std::mutex> lock(mu_);
    return advice_;
  }

 private:
  class Recording : public ForwardingFile {
   public:
    Recording(std::unique_ptr<File> f, AdviceLog* log) : ForwardingFile(std::move(f)), log_(log) {}
    void WillNeed(uint64_t pos, uint64_t len) override {
      std::lock_guard<std::mutex> lock(log_->mu_);
      log_->advice_.push_back({path(), pos, len});
    }

   private:
    AdviceLog* log_;
  };
  std::mutex mu_;
  std::vector<Advice> advice_;
};

class ReadAheadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(mem_.CreateDir("/p").ok());
    for (const char* name : {"/p/0.log", "/p/1.log", "/p/2.log"}) {
      auto f = mem_.Open(name, OpenMode::kTruncate);
      ASSERT_TRUE(f.ok());
      ASSERT_TRUE((*f)->WriteAt(0, std::vector<uint8_t>(1000, 7)).ok());
    }
  }

  void WaitForAdvice(uint64_t bytes, ReadAheadFileSystem& fs) {
    for (int i = 0; i < 2000 && fs.advised_bytes() < bytes; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  testing::MemFileSystem mem_;
  AdviceLog log_{&mem_};
};

TEST_F(ReadAheadTest, StaysWithinTheWindowAndAdvancesWithTheReader) {
  ReadAheadFileSystem fs(&log_, {"/p/0.log", "/p/1.log", "/p/2.log"}, 1500);
  WaitForAdvice(1500, fs);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(fs.advised_bytes(), 1500u);  // not beyond the window before any read
  auto advice = log_.advice();
  ASSERT_EQ(advice.size(), 2u);
  EXPECT_EQ(advice[0].path, "/p/0.log");
  EXPECT_EQ(advice[0].len, 1000u);
  EXPECT_EQ(advice[1].path, "/p/1.log");
  EXPECT_EQ(advice[1].pos, 0u);
  EXPECT_EQ(advice[1].len, 500u);

  auto f = fs.Open("/p/1.log", OpenMode::kRead);
  ASSERT_TRUE(f.ok());
  std::vector<uint8_t> buf(600);
  ASSERT_TRUE((*f)->ReadAt(0, buf).ok());  // the reader is at 1600: window ends at 3000
  WaitForAdvice(3000, fs);
  EXPECT_EQ(fs.advised_bytes(), 3000u);
  advice = log_.advice();
  uint64_t total = 0;
  for (const auto& a : advice) total += a.len;
  // Every byte at most once; [1500, 1600) was read before it was advised.
  EXPECT_EQ(total, 2900u);
  EXPECT_EQ(advice.back().path, "/p/2.log");
}

TEST_F(ReadAheadTest, OtherFilesPassThroughAndWaitFollowsTheReader) {
  ReadAheadFileSystem fs(&log_, {"/p/0.log", "/p/1.log"});
  bool followed = false;
  std::thread follower([&] {
    fs.WaitUntilRead("/p/0.log");
    followed = true;
  });
  auto f = fs.Open("/p/0.log", OpenMode::kRead);
  ASSERT_TRUE(f.ok());
  std::vector<uint8_t> buf(1000);
  ASSERT_TRUE((*f)->ReadAt(0, buf).ok());
  follower.join();
  EXPECT_TRUE(followed);
  fs.WaitUntilRead("/p/unknown.log");  // returns at once
  std::thread after_finish([&] { fs.WaitUntilRead("/p/1.log"); });
  fs.Finish();  // the reader gave up before segment 1
  after_finish.join();
  auto other = fs.Open("/p/2.log", OpenMode::kRead);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ((*other)->path(), "/p/2.log");
}

}  // namespace
}  // namespace daruma
