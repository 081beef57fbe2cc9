// Measuring recovery (recovery_bench, producer_recovery_bench): the
// read()+CRC-32C baseline a scan of the same files is compared with, and the
// CPU time and peak RSS of one recovery.
#pragma once

#include <benchmark/benchmark.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "common/crc32c.h"

namespace daruma::bench {

// read() + CRC-32C over files[first], files[first + stride], ...: with
// stride = T, T threads share the files as recovery threads share segments.
inline uint64_t ReadAndCrc(const std::vector<std::string>& files, size_t first = 0,
                           size_t stride = 1) {
  // The block size of recovery's scans (log/segment_recovery_scan.cc).
  thread_local std::vector<uint8_t> buffer(256 << 10);
  uint64_t bytes = 0;
  uint32_t acc = 0;
  for (size_t i = first; i < files.size(); i += stride) {
    const std::string& path = files[i];
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) std::abort();
    for (;;) {
      ssize_t n = ::read(fd, buffer.data(), buffer.size());
      if (n <= 0) break;
      acc ^= Crc32c(buffer.data(), size_t(n));
      bytes += uint64_t(n);
    }
    ::close(fd);
  }
  benchmark::DoNotOptimize(acc);
  return bytes;
}

// How the page cache holds the files being recovered. A crashed broker's
// segments were written by appends of one produce request's batch at a
// time, and the kernel caches such writes in small folios (4 KiB pages);
// after a reboot they are read back by readahead, which builds large folios
// on kernels whose file system supports them (ext4 since Linux 6.16). Each
// read() then looks up and copies a few large folios instead of 64 small
// pages: on the benchmark VM (6.18, ext4) a warm 128 MiB segment read at
// 3.8-4.8 GB/s as written and 16-17 GB/s once reloaded. Both are a warm
// cache. $DARUMA_BENCH_PAGE_CACHE selects one before measuring:
//   appended  every file rewritten by 4 KiB appends (as after a crash)
//   reloaded  every file dropped from the cache and read back (as after a
//             reboot)
//   unset     as it is: as the generator's appends left it, unless an
//             earlier run on the same files reloaded them
enum class PageCacheMode { kAsIs = 0, kAppended = 1, kReloaded = 2 };

inline PageCacheMode PageCacheModeFromEnv() {
  const char* mode = std::getenv("DARUMA_BENCH_PAGE_CACHE");
  const std::string m = mode != nullptr ? mode : "";
  if (m == "appended") return PageCacheMode::kAppended;
  if (m == "reloaded") return PageCacheMode::kReloaded;
  return PageCacheMode::kAsIs;
}

inline const char* PageCacheModeName(PageCacheMode mode) {
  switch (mode) {
    case PageCacheMode::kAppended:
      return "appended";
    case PageCacheMode::kReloaded:
      return "reloaded";
    case PageCacheMode::kAsIs:
      break;
  }
  return "as is";
}

// Puts `files` in the page cache as `mode` says. Recovery rewrites no .log
// byte of an intact segment, so the state holds for every later iteration
// on the same files.
inline void PreparePageCache(const std::vector<std::string>& files, PageCacheMode mode) {
  if (mode == PageCacheMode::kAsIs) return;
  std::vector<uint8_t> buffer(size_t(1) << 20);
  for (const std::string& path : files) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) std::abort();
    if (mode == PageCacheMode::kAppended) {
      // A copy written 4 KiB at a time, renamed over the file.
      const std::string tmp = path + ".pagecache";
      int out = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (out < 0) std::abort();
      for (;;) {
        const ssize_t n = ::read(fd, buffer.data(), buffer.size());
        if (n < 0) std::abort();
        if (n == 0) break;
        for (ssize_t at = 0; at < n; at += 4096) {
          const size_t len = size_t(std::min<ssize_t>(4096, n - at));
          if (::write(out, buffer.data() + at, len) != ssize_t(len)) std::abort();
        }
      }
      if (::fdatasync(out) != 0 || ::close(out) != 0) std::abort();
      if (::rename(tmp.c_str(), path.c_str()) != 0) std::abort();
    } else {
      // Dirty pages are not dropped: write them back first.
      if (::fdatasync(fd) != 0) std::abort();
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
      while (::read(fd, buffer.data(), buffer.size()) > 0) {
      }
    }
    ::close(fd);
  }
}

// The floors under a scan of `files` from the page cache, each one pass on
// one thread, in seconds: the kernel's copy alone (read() into recovery's
// 256 KiB block, no CRC), and CRC-32C over a mapping populated up front (no
// copy; the page-table work instead). Whichever is lower bounds what any
// scan that checks every byte can reach on this machine.
struct ScanFloors {
  double read_only_seconds = 0;
  double mapped_crc_seconds = 0;
};
inline ScanFloors MeasureScanFloors(const std::vector<std::string>& files) {
  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  ScanFloors floors;
  std::vector<uint8_t> buffer(256 << 10);
  auto start = Clock::now();
  for (const std::string& path : files) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) std::abort();
    while (::read(fd, buffer.data(), buffer.size()) > 0) {
    }
    ::close(fd);
  }
  floors.read_only_seconds = seconds_since(start);
  uint32_t acc = 0;
  start = Clock::now();
  for (const std::string& path : files) {
    int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0) std::abort();
    struct stat st {};
    if (::fstat(fd, &st) != 0) std::abort();
    const size_t size = size_t(st.st_size);
    if (size > 0) {
      void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
      if (p == MAP_FAILED) std::abort();
      acc ^= Crc32c(p, size);
      ::munmap(p, size);
    }
    ::close(fd);
  }
  floors.mapped_crc_seconds = seconds_since(start);
  benchmark::DoNotOptimize(acc);
  return floors;
}

// User + system CPU seconds of this process so far (every thread, also
// finished ones: recovery's threads are joined before Startup returns).
inline double ProcessCpuSeconds() {
  struct rusage usage {};
  ::getrusage(RUSAGE_SELF, &usage);
  auto seconds = [](const timeval& tv) { return double(tv.tv_sec) + double(tv.tv_usec) / 1e6; };
  return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Runs `fn` in a child process and returns the child's peak RSS in MiB.
inline double PeakRssMiBOfChild(const std::function<void()>& fn) {
  pid_t pid = ::fork();
  if (pid == 0) {
    fn();
    std::_Exit(0);
  }
  int status = 0;
  struct rusage usage {};
  if (::wait4(pid, &status, 0, &usage) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return -1;
  }
  return double(usage.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

}  // namespace daruma::bench
