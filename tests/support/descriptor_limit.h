// Descriptor accounting for tests of daruma.max.open.files: how many
// descriptors the process holds, and a scoped lower RLIMIT_NOFILE so that
// going past it is EMFILE.
#pragma once

#include <gtest/gtest.h>
#include <sys/resource.h>

#include <filesystem>

namespace daruma::testing {

// Descriptors this process holds now (entries of /proc/self/fd, which
// includes the one the listing itself opens).
inline int OpenDescriptors() {
  int n = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// Lowers the soft RLIMIT_NOFILE for the scope, so going past it is EMFILE.
class DescriptorLimit {
 public:
  explicit DescriptorLimit(rlim_t soft) {
    EXPECT_EQ(::getrlimit(RLIMIT_NOFILE, &saved_), 0);
    struct rlimit lowered = saved_;
    lowered.rlim_cur = soft;
    EXPECT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  }
  ~DescriptorLimit() { ::setrlimit(RLIMIT_NOFILE, &saved_); }
  DescriptorLimit(const DescriptorLimit&) = delete;
  DescriptorLimit& operator=(const DescriptorLimit&) = delete;

 private:
  struct rlimit saved_ {};
};

}  // namespace daruma::testing
