// snappy codec (spec §4.2): snappy-java's ("xerial") stream framing, which is
// NOT the official framed-snappy format.
//
//   header (16 bytes): 82 53 4E 41 50 50 59 00 | int32 BE version (1) | int32 BE min compat (1)
//   chunk*:            int32 BE compressed length n | n bytes of one raw snappy block
//
// The writer compresses at most kSnappyChunkBytes of input per chunk. The
// reader, like snappy-java's, treats input that does not start with the magic
// as one raw snappy block, treats empty input as an empty stream, and accepts
// a repeated 16-byte header between chunks (concatenated streams).
//
// Contract: SnappyDecompress checks each block's declared uncompressed length
// against the remaining budget before allocating, so it never holds more than
// max_output bytes of output; exceeding it yields kTooLarge.
#pragma once

#include <cstddef>

#include "common/bytes.h"
#include "common/status.h"

namespace daruma {

inline constexpr size_t kSnappyChunkBytes = 32 * 1024;
inline constexpr size_t kSnappyHeaderBytes = 16;

Result<Bytes> SnappyDecompress(ByteSpan input, size_t max_output);
Result<Bytes> SnappyCompress(ByteSpan input);

}  // namespace daruma
