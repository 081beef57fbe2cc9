// Kafka's compression codecs (spec §4): gzip, snappy (xerial framing or raw),
// lz4 (Kafka's LZ4 frame, with the broken v0 header checksum), zstd.
//
// Contract: Decompress never produces more than `max_output` bytes; a stream
// that would exceed it fails with kTooLarge, so a hostile batch cannot exhaust
// memory. Errors name the codec and what was wrong.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/bytes.h"
#include "common/status.h"

namespace daruma {

enum class CompressionType : uint8_t {
  kNone = 0,
  kGzip = 1,
  kSnappy = 2,
  kLz4 = 3,
  kZstd = 4,
};

// Default bound on decompressed size: Kafka's default max message size.
inline constexpr size_t kDefaultMaxDecompressedBytes = 1048588;

// The most one batch's records may decompress to on a topic whose
// max.message.bytes (which Kafka checks on the batch as sent, compressed) is
// `max_message_bytes`: 64 times that, never below the default, at most the
// int32 sizes' 2 GiB - 1. Kafka streams the records and has no such bound;
// Daruma decodes a batch in memory (grown as it decompresses, never
// reserved), so a small batch cannot make it hold gigabytes. A 2 MiB record
// of zeros (2 KiB gzipped) on a default topic fits.
size_t MaxDecompressedBytesFor(int64_t max_message_bytes);
// Tools reading an operator's own files: only the size fields' bound.
inline constexpr size_t kToolMaxDecompressedBytes = 0x7fffffff;

// "none", "gzip", "snappy", "lz4", "zstd" (kafka-dump-log's compresscodec names),
// or "unknown(<id>)" for ids 5..7.
std::string_view CompressionName(CompressionType type);
std::optional<CompressionType> CompressionFromName(std::string_view name);
// Returns nullopt for codec ids 5..7.
std::optional<CompressionType> CompressionFromId(int id);

// magic selects the LZ4 header-checksum quirk: magic 0 skips verification of
// the frame header checksum (and writes the broken form when compressing).
Result<Bytes> Decompress(CompressionType type, ByteSpan input, size_t max_output, int8_t magic = 2);

// level < 0 selects the codec's Kafka default (gzip 6, lz4 9, zstd 3).
Result<Bytes> Compress(CompressionType type, ByteSpan input, int8_t magic = 2, int level = -1);

}  // namespace daruma
