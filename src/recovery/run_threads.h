// Small helpers of the log manager's parts (start-up loads, shutdown
// flushes): a fixed pool of std::threads for one job, and elapsed time on the
// injected clock.
#pragma once

#include <cstdint>
#include <thread>
#include <vector>

#include "common/clock.h"

namespace daruma {

// Runs body(i) for i in [0, threads) on that many std::threads and joins them.
template <typename Body>
void RunThreads(int threads, Body body) {
  std::vector<std::thread> pool;
  pool.reserve(size_t(threads));
  for (int i = 0; i < threads; ++i) pool.emplace_back([&body, i] { body(i); });
  for (auto& t : pool) t.join();
}

inline int64_t ElapsedMs(Clock* clock, int64_t start_nanos) {
  return (clock->NowNanos() - start_nanos) / 1000000;
}

}  // namespace daruma
