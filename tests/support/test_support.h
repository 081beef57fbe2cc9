// Helpers shared by every test binary: fixture lookup, scratch directories.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>

namespace daruma::testing {

// The wall-clock milliseconds most tests start their ManualClock at
// (2023-11-14T22:13:20Z).
inline constexpr int64_t kT0 = 1'700'000'000'000;

// The shared fixtures directory (../shared/fixtures by default), or "" when
// absent. Tests that need it call DARUMA_REQUIRE_FIXTURES() first.
std::string FixturesDir();

// A fresh directory under $TMPDIR, removed with everything in it on
// destruction (unless DARUMA_KEEP_TMP is set, for debugging).
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Recursively copies `from` into `to` (created), preserving file contents.
void CopyTree(const std::string& from, const std::string& to);

std::string ReadFileToString(const std::string& path);

// The unsigned decimal value of environment variable `name`, or `fallback`
// when it is unset or empty (how long matrices and campaigns are sized).
uint64_t EnvU64(const char* name, uint64_t fallback);
void WriteStringToFile(const std::string& path, const std::string& data);

}  // namespace daruma::testing

// Skips the current test with a clear SKIPPED line when fixtures are absent.
#define DARUMA_REQUIRE_FIXTURES()                                                  \
  do {                                                                             \
    if (::daruma::testing::FixturesDir().empty()) {                                \
      GTEST_SKIP() << "SKIPPED: shared fixtures not found at " DARUMA_FIXTURES_DIR \
                      " (set -DDARUMA_FIXTURES_DIR=...)";                          \
    }                                                                              \
  } while (0)
