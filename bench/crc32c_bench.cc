// CRC-32C throughput of each implementation on buffer sizes from one small
// record (64 B) to a large batch (1 MiB): the three-stream hardware loop with
// carry-less-multiply merges Daruma uses where PCLMULQDQ exists, the
// three-stream loop with table merges it uses otherwise, the single-stream
// hardware loop, and the portable slicing-by-8 table loop. Sizes include a
// typical ~1 KiB batch's CRC range (1043 B) and a few hundred bytes. Reported
// as bytes/s.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "common/crc32c.h"

namespace daruma {
namespace {

using CrcFunction = uint32_t (*)(uint32_t, const uint8_t*, size_t);

std::vector<uint8_t> Buffer(size_t n) {
  std::vector<uint8_t> data(n);
  uint32_t x = 0x9E3779B9u;
  for (auto& b : data) {
    x = x * 1664525u + 1013904223u;
    b = uint8_t(x >> 24);
  }
  return data;
}

void RunCrc(benchmark::State& state, CrcFunction fn, bool needs_hardware) {
  if (needs_hardware && !crc32c_internal::HardwareAvailable()) {
    state.SkipWithError("no SSE4.2 crc32 instruction on this CPU");
    return;
  }
  const std::vector<uint8_t> data = Buffer(size_t(state.range(0)));
  uint32_t crc = 0;
  for (auto _ : state) {
    crc = fn(crc, data.data(), data.size());
    benchmark::DoNotOptimize(crc);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(data.size()));
}

void BM_Crc32cClmul(benchmark::State& state) {
  if (!crc32c_internal::ClmulAvailable()) {
    state.SkipWithError("no PCLMULQDQ on this CPU");
    return;
  }
  RunCrc(state, crc32c_internal::ExtendHardwareClmul, true);
}
void BM_Crc32cInterleaved(benchmark::State& state) {
  RunCrc(state, crc32c_internal::ExtendHardwareInterleaved, true);
}
void BM_Crc32cSingleStream(benchmark::State& state) {
  RunCrc(state, crc32c_internal::ExtendHardwareSingleStream, true);
}
void BM_Crc32cPortable(benchmark::State& state) {
  RunCrc(state, crc32c_internal::ExtendPortable, false);
}

#define DARUMA_CRC_SIZES \
  Arg(64)->Arg(300)->Arg(1 << 10)->Arg(1043)->Arg(4000)->Arg(64 << 10)->Arg(1 << 20)
BENCHMARK(BM_Crc32cClmul)->DARUMA_CRC_SIZES;
BENCHMARK(BM_Crc32cInterleaved)->DARUMA_CRC_SIZES;
BENCHMARK(BM_Crc32cSingleStream)->DARUMA_CRC_SIZES;
BENCHMARK(BM_Crc32cPortable)->DARUMA_CRC_SIZES;

}  // namespace
}  // namespace daruma

BENCHMARK_MAIN();
