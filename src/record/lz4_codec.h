// lz4 codec (spec §4.3): the LZ4 frame format as Kafka writes and reads it,
// implemented over liblz4's block API (not lz4frame) because of Kafka's quirks.
//
//   magic  4 bytes LE 0x184D2204            (04 22 4D 18)
//   FLG    1 byte  version 01 (bits 6-7) | block independence (5) | block checksum (4)
//                  | content size (3) | content checksum (2) | reserved (0-1) = 0
//   BD     1 byte  block max size code n in bits 4-6 (max block = 2^(2n+8)), others 0
//   [content size 8 bytes LE, if FLG bit 3]
//   HC     1 byte  (XXH32(descriptor) >> 8) & 0xFF
//   block* 4-byte LE size word (bit 31: stored uncompressed; low 31 bits: size),
//          the block bytes, [4-byte LE XXH32 of the block bytes, if FLG bit 4]
//   end    4 bytes 00 00 00 00
//   [content checksum 4 bytes, if FLG bit 2; read but not verified]
//
// Kafka writes FLG 0x60, BD 0x40 (64 KiB blocks), no checksums or content size.
// The descriptor for HC is FLG..content size. Magic v0 data carries the broken
// form computed over bytes 0..5 (magic included): the writer reproduces it and
// the reader skips HC for magic 0; for magic >= 1 HC is written and verified.
//
// Contract: Lz4Decompress never holds more than max_output bytes of output
// (plus one byte used to detect an overrun); exceeding it yields kTooLarge.
// Bytes after the end mark (and content checksum) are ignored, as in Kafka.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/bytes.h"
#include "common/status.h"

namespace daruma {

inline constexpr uint32_t kLz4FrameMagic = 0x184D2204;
inline constexpr int kLz4DefaultLevel = 9;
inline constexpr size_t kLz4KafkaBlockBytes = 64 * 1024;

Result<Bytes> Lz4Decompress(ByteSpan input, size_t max_output, int8_t magic);

// level < 0 or kLz4DefaultLevel uses the fast compressor (as Kafka's default
// does); other levels use LZ4 HC at that level.
Result<Bytes> Lz4Compress(ByteSpan input, int8_t magic, int level);

// The HC byte over `descriptor` (for the correct form: FLG, BD[, content size];
// for the broken v0 form: the magic too).
uint8_t Lz4HeaderChecksum(ByteSpan descriptor);

}  // namespace daruma
