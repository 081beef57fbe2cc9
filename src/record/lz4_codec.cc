#include "record/lz4_codec.h"

#include <lz4.h>
#include <lz4hc.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <string>

#include "common/xxhash32.h"

namespace daruma {
namespace {

constexpr uint8_t kFlgVersionMask = 0xC0;
constexpr uint8_t kFlgVersion1 = 0x40;
constexpr uint8_t kFlgBlockIndependence = 0x20;
constexpr uint8_t kFlgBlockChecksum = 0x10;
constexpr uint8_t kFlgContentSize = 0x08;
constexpr uint8_t kFlgContentChecksum = 0x04;
constexpr uint8_t kFlgReserved = 0x03;
constexpr uint8_t kBdSizeMask = 0x70;
constexpr uint8_t kBdReserved = 0x8F;
constexpr uint32_t kUncompressedBit = 0x80000000u;
// What Kafka writes: version 1, independent blocks; 64 KiB blocks.
constexpr uint8_t kKafkaFlg = kFlgVersion1 | kFlgBlockIndependence;
constexpr uint8_t kKafkaBd = 4 << 4;

void StoreLe32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = uint8_t(v >> (8 * i));
}

std::string Hex(uint32_t v, int digits) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%0*X", digits, v);
  return buf;
}

std::string At(size_t pos) {
  return " at byte " + std::to_string(pos);
}

Status Corrupt(const std::string& what, size_t pos) {
  return Status::Corruption("lz4: " + what + At(pos));
}

Status TooLarge(size_t max_output) {
  return Status::TooLarge("lz4: decompressed size exceeds limit of " + std::to_string(max_output) +
                          " bytes");
}

struct FrameHeader {
  bool block_checksum = false;
  bool content_checksum = false;
  size_t max_block = 0;
  size_t size = 0;  // bytes of magic + descriptor + HC
};

Result<FrameHeader> ParseHeader(ByteSpan in, int8_t magic) {
  if (in.size() < 4) return Corrupt("truncated frame magic", 0);
  const uint32_t frame_magic = LoadLe32(in.data());
  if (frame_magic != kLz4FrameMagic) {
    return Corrupt("expected frame magic 0x184D2204, found " + Hex(frame_magic, 8), 0);
  }
  if (in.size() < 6) return Corrupt("truncated frame descriptor", in.size());
  const uint8_t flg = in[4];
  const uint8_t bd = in[5];
  if ((flg & kFlgVersionMask) != kFlgVersion1) {
    return Corrupt("unsupported frame version " + std::to_string(flg >> 6), 4);
  }
  if ((flg & kFlgReserved) != 0) return Corrupt("FLG reserved bits set", 4);
  if ((flg & kFlgBlockIndependence) == 0) {
    return Corrupt("dependent blocks are not supported", 4);
  }
  if ((bd & kBdReserved) != 0) return Corrupt("BD reserved bits set", 5);
  const int size_code = (bd & kBdSizeMask) >> 4;
  if (size_code < 4) return Corrupt("invalid block max size code " + std::to_string(size_code), 5);
  FrameHeader h;
  h.block_checksum = (flg & kFlgBlockChecksum) != 0;
  h.content_checksum = (flg & kFlgContentChecksum) != 0;
  h.max_block = size_t(1) << (2 * size_code + 8);
  const size_t descriptor_end = (flg & kFlgContentSize) != 0 ? 14 : 6;
  if (in.size() < descriptor_end + 1) return Corrupt("truncated frame descriptor", in.size());
  h.size = descriptor_end + 1;
  // Magic 0 data may carry the broken checksum (over the magic too): skip it.
  if (magic >= 1) {
    const uint8_t expected = Lz4HeaderChecksum(in.subspan(4, descriptor_end - 4));
    const uint8_t found = in[descriptor_end];
    if (expected != found) {
      return Corrupt(
          "header checksum mismatch: expected " + Hex(expected, 2) + ", found " + Hex(found, 2),
          descriptor_end);
    }
  }
  return h;
}

// An LZ4 block of n bytes decodes to at most 255 * n bytes: a literal costs
// its own input byte, and a match gains at most 255 output bytes per input
// byte (each 255-valued length byte), the 19 of its token and offset costing
// 3. Sizing the output by this, not by the frame's maximum block (64 KiB as
// Kafka writes it, up to 4 MiB), spares zero-filling memory that a small
// block cannot use.
size_t MaxDecodedSize(const ByteSpan& block, const FrameHeader& h) {
  return std::min(h.max_block, block.size() * 255);
}

// The size `block` decodes to, from its sequences' lengths alone (LZ4 block
// format: token, literal length bytes, literals, 2-byte offset, match length
// bytes; the last sequence has literals only); nullopt when the lengths run
// past the block or the frame's block size. Offsets are not checked: the
// decoder still validates everything, this only sizes its output, so that
// a block is not decoded into max_block bytes zero-filled first (a 300-byte
// block of a small batch zero-filled 64 KiB).
std::optional<size_t> DecodedSizeOf(ByteSpan block, size_t max_block) {
  const size_t n = block.size();
  size_t i = 0;
  size_t out = 0;
  // Adds a length's 255-continued extension bytes to *length.
  auto extend = [&](size_t* length) {
    for (;;) {
      if (i >= n) return false;
      const uint8_t b = block[i++];
      *length += b;
      if (b != 255) return true;
    }
  };
  while (i < n) {
    const uint8_t token = block[i++];
    size_t literals = token >> 4;
    if (literals == 15 && !extend(&literals)) return std::nullopt;
    if (literals > n - i) return std::nullopt;
    i += literals;
    out += literals;
    if (i == n) return out <= max_block ? std::optional<size_t>(out) : std::nullopt;
    if (n - i < 2) return std::nullopt;
    i += 2;
    size_t match = token & 15;
    if (match == 15 && !extend(&match)) return std::nullopt;
    out += match + 4;
    if (out > max_block) return std::nullopt;
  }
  return std::nullopt;  // empty, or ended after a match: not a valid block
}

// Decodes one compressed block into `out`, never growing it past
// max_output + 1 bytes.
Status AppendCompressedBlock(ByteSpan block, size_t pos, const FrameHeader& h, size_t max_output,
                             Bytes* out) {
  const size_t budget = max_output - out->size();
  const size_t start = out->size();
  const char* src = reinterpret_cast<const char*>(block.data());
  if (const std::optional<size_t> exact = DecodedSizeOf(block, h.max_block);
      exact && *exact <= budget) {
    out->resize(start + *exact);
    const int n = LZ4_decompress_safe(src, reinterpret_cast<char*>(out->data() + start),
                                      int(block.size()), int(*exact));
    if (n >= 0 && size_t(n) == *exact) return Status::Ok();
    // Not what the lengths said: the paths below decide what is wrong.
    out->resize(start);
  }
  const size_t capacity = MaxDecodedSize(block, h);
  if (budget >= capacity) {
    out->resize(start + capacity);
    const int n = LZ4_decompress_safe(src, reinterpret_cast<char*>(out->data() + start),
                                      int(block.size()), int(capacity));
    if (n < 0) return Corrupt("corrupt compressed block", pos);
    out->resize(start + size_t(n));
    return Status::Ok();
  }
  // Less room than a full block: decode at most budget + 1 bytes; getting all
  // of them means the block would overrun the limit.
  const int target = int(budget + 1);
  out->resize(start + size_t(target));
  const int n = LZ4_decompress_safe_partial(src, reinterpret_cast<char*>(out->data() + start),
                                            int(block.size()), target, target);
  if (n < 0) return Corrupt("corrupt compressed block", pos);
  if (n == target) return TooLarge(max_output);
  out->resize(start + size_t(n));
  return Status::Ok();
}

Status AppendBlocks(ByteSpan in, const FrameHeader& h, size_t max_output, Bytes* out) {
  size_t pos = h.size;
  while (true) {
    if (in.size() - pos < 4) return Corrupt("truncated block size (missing end mark)", pos);
    const uint32_t word = LoadLe32(in.data() + pos);
    if (word == 0) break;
    const bool stored = (word & kUncompressedBit) != 0;
    const size_t size = word & ~kUncompressedBit;
    if (size > h.max_block) {
      return Corrupt("block size " + std::to_string(size) + " exceeds max block size " +
                         std::to_string(h.max_block),
                     pos);
    }
    const size_t data_pos = pos + 4;
    const size_t checksum_bytes = h.block_checksum ? 4 : 0;
    if (in.size() - data_pos < size + checksum_bytes) {
      return Corrupt("truncated block of " + std::to_string(size) + " bytes", data_pos);
    }
    ByteSpan block = in.subspan(data_pos, size);
    if (h.block_checksum) {
      const uint32_t expected = XxHash32(block.data(), block.size());
      const uint32_t found = LoadLe32(in.data() + data_pos + size);
      if (expected != found) return Corrupt("block checksum mismatch", data_pos + size);
    }
    if (stored) {
      if (size > max_output - out->size()) return TooLarge(max_output);
      out->insert(out->end(), block.begin(), block.end());
    } else {
      DARUMA_RETURN_IF_ERROR(AppendCompressedBlock(block, data_pos, h, max_output, out));
    }
    pos = data_pos + size + checksum_bytes;
  }
  pos += 4;
  if (h.content_checksum && in.size() - pos < 4) {
    return Corrupt("truncated content checksum", pos);
  }
  return Status::Ok();
}

// Compresses one block of at most kLz4KafkaBlockBytes, falling back to a
// stored block when compression does not shrink it (as Kafka does).
void AppendBlock(ByteSpan block, int level, Bytes* out) {
  const size_t at = out->size();
  const int bound = LZ4_compressBound(int(block.size()));
  out->resize(at + 4 + size_t(bound));
  const char* src = reinterpret_cast<const char*>(block.data());
  char* dst = reinterpret_cast<char*>(out->data() + at + 4);
  const bool fast = level < 0 || level == kLz4DefaultLevel;
  const int n = fast ? LZ4_compress_default(src, dst, int(block.size()), bound)
                     : LZ4_compress_HC(src, dst, int(block.size()), bound, level);
  if (n <= 0 || size_t(n) >= block.size()) {
    std::copy(block.begin(), block.end(), out->begin() + ptrdiff_t(at + 4));
    StoreLe32(out->data() + at, uint32_t(block.size()) | kUncompressedBit);
    out->resize(at + 4 + block.size());
    return;
  }
  StoreLe32(out->data() + at, uint32_t(n));
  out->resize(at + 4 + size_t(n));
}

}  // namespace

uint8_t Lz4HeaderChecksum(ByteSpan descriptor) {
  return uint8_t((XxHash32(descriptor.data(), descriptor.size()) >> 8) & 0xFF);
}

Result<Bytes> Lz4Decompress(ByteSpan input, size_t max_output, int8_t magic) {
  DARUMA_ASSIGN_OR_RETURN(FrameHeader header, ParseHeader(input, magic));
  Bytes out;
  DARUMA_RETURN_IF_ERROR(AppendBlocks(input, header, max_output, &out));
  return out;
}

Result<Bytes> Lz4Compress(ByteSpan input, int8_t magic, int level) {
  Bytes out = {0x04, 0x22, 0x4D, 0x18, kKafkaFlg, kKafkaBd};
  // v0 reproduces the broken checksum over the magic bytes as well.
  ByteSpan descriptor = magic == 0 ? ByteSpan(out.data(), 6) : ByteSpan(out.data() + 4, 2);
  const uint8_t hc = Lz4HeaderChecksum(descriptor);
  out.push_back(hc);
  for (size_t pos = 0; pos < input.size(); pos += kLz4KafkaBlockBytes) {
    AppendBlock(input.subspan(pos, std::min(kLz4KafkaBlockBytes, input.size() - pos)), level, &out);
  }
  out.insert(out.end(), 4, 0);
  return out;
}

}  // namespace daruma
