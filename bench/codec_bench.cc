// Decompression cost per batch payload, the work the broker's produce
// validator, the cleaner and `daruma dump` do for every compressed batch:
//
//   BM_ZstdDecompress/<bytes>             daruma::Decompress (one reused
//                                         libzstd stream per thread)
//   BM_ZstdDecompressFreshStream/<bytes>  the baseline, in the same run: a
//                                         stream created and freed per call,
//                                         as Daruma did before
//
// Payloads are zstd frames (level 3, as Kafka's producer default) of
// compressible record-like bytes: a ~1 KiB batch, a 16 KiB batch, and a
// 1 MiB one where the setup is noise. Reported as time per call and
// uncompressed bytes/s.
#include <benchmark/benchmark.h>
#include <zstd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string_view>
#include <vector>

#include "common/bytes.h"
#include "record/compression.h"
#include "record/record_batch.h"

namespace daruma {
namespace {

Bytes RecordLikeBytes(size_t n) {
  static const char* kWords[] = {"key-", "value ", "order-id=", "user ", "amount=", "\"ts\":"};
  std::mt19937 rng(42);
  Bytes out;
  out.reserve(n);
  while (out.size() < n) {
    const std::string_view w = kWords[rng() % 6];
    out.insert(out.end(), w.begin(), w.end());
    out.push_back(uint8_t('0' + rng() % 10));
  }
  out.resize(n);
  return out;
}

Bytes Frame(size_t n) {
  auto r = Compress(CompressionType::kZstd, RecordLikeBytes(n), kMagicV2, 3);
  if (!r.ok()) {
    std::fprintf(stderr, "codec_bench: %s\n", r.status().ToString().c_str());
    std::exit(1);
  }
  return *r;
}

void BM_ZstdDecompress(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  const Bytes frame = Frame(n);
  for (auto _ : state) {
    auto r = Decompress(CompressionType::kZstd, frame, n + 1);
    if (!r.ok() || r->size() != n) state.SkipWithError("decompression failed");
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n));
}

// The decode loop of daruma::ZstdDecompress before the stream was reused:
// 64 KiB chunks appended to the output, around a stream of its own.
void BM_ZstdDecompressFreshStream(benchmark::State& state) {
  const size_t n = size_t(state.range(0));
  const Bytes frame = Frame(n);
  std::vector<uint8_t> chunk(64 << 10);
  for (auto _ : state) {
    ZSTD_DStream* ds = ZSTD_createDStream();
    ZSTD_inBuffer in{frame.data(), frame.size(), 0};
    Bytes out;
    size_t rc = 1;
    while (!ZSTD_isError(rc)) {
      ZSTD_outBuffer ob{chunk.data(), chunk.size(), 0};
      rc = ZSTD_decompressStream(ds, &ob, &in);
      if (ZSTD_isError(rc)) break;
      out.insert(out.end(), chunk.data(), chunk.data() + ob.pos);
      if (rc == 0 && in.pos == in.size) break;
    }
    ZSTD_freeDStream(ds);
    if (ZSTD_isError(rc) || out.size() != n) state.SkipWithError("decompression failed");
    benchmark::DoNotOptimize(out);
  }
  state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(n));
}

BENCHMARK(BM_ZstdDecompress)->Arg(1024)->Arg(16 << 10)->Arg(1 << 20);
BENCHMARK(BM_ZstdDecompressFreshStream)->Arg(1024)->Arg(16 << 10)->Arg(1 << 20);

}  // namespace
}  // namespace daruma

BENCHMARK_MAIN();
