// zstd codec (spec §4.4): standard Zstandard frames (RFC 8878), one or more
// consecutive frames, as zstd-jni's streaming compressor writes them. Only
// valid inside magic v2 batches; the caller enforces that (see compression.h).
//
// Contract: ZstdDecompress streams output in bounded chunks and never trusts a
// frame's declared content size for allocation, so it holds at most
// max_output bytes of output (plus one chunk of scratch); exceeding it yields
// kTooLarge. libzstd's own window buffer is bounded by its default window
// limit (2^27), which covers every level a Kafka producer may use. Each
// thread reuses one decompression stream between calls (reset per call;
// freed instead when a large window grew it past 8 MiB): a new stream per
// ~1 KiB batch took more time than the decoding (bench/codec_bench.cc).
#pragma once

#include <cstddef>

#include "common/bytes.h"
#include "common/status.h"

namespace daruma {

inline constexpr int kZstdDefaultLevel = 3;

Result<Bytes> ZstdDecompress(ByteSpan input, size_t max_output);

// level < 0 selects kZstdDefaultLevel (Kafka's negative "fast" levels are not
// reachable through this API).
Result<Bytes> ZstdCompress(ByteSpan input, int level);

}  // namespace daruma
