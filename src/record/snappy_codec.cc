#include "record/snappy_codec.h"

#include <snappy.h>

#include <algorithm>
#include <cstring>
#include <string>

namespace daruma {
namespace {

constexpr uint8_t kXerialMagic[8] = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0x00};
constexpr int32_t kXerialVersion = 1;
constexpr int32_t kMinCompatibleVersion = 1;

bool HasMagicAt(ByteSpan data, size_t pos) {
  return data.size() - pos >= kSnappyHeaderBytes &&
         std::memcmp(data.data() + pos, kXerialMagic, sizeof(kXerialMagic)) == 0;
}

Status SnappyTooLarge(size_t max_output) {
  return Status::TooLarge("snappy: decompressed size exceeds limit of " +
                          std::to_string(max_output) + " bytes");
}

// Appends the decompression of one raw snappy block to `out`. `pos` is the
// block's byte position in the whole input, for messages.
Status AppendRawBlock(ByteSpan block, size_t pos, size_t max_output, Bytes* out) {
  const char* data = reinterpret_cast<const char*>(block.data());
  size_t length = 0;
  if (!snappy::GetUncompressedLength(data, block.size(), &length)) {
    return Status::Corruption("snappy: invalid block length preamble at byte " +
                              std::to_string(pos));
  }
  if (length > max_output - out->size()) return SnappyTooLarge(max_output);
  const size_t start = out->size();
  out->resize(start + length);
  if (!snappy::RawUncompress(data, block.size(), reinterpret_cast<char*>(out->data() + start))) {
    return Status::Corruption("snappy: corrupt block at byte " + std::to_string(pos));
  }
  return Status::Ok();
}

Status DecompressFramed(ByteSpan input, size_t max_output, Bytes* out) {
  size_t pos = 0;
  while (pos < input.size()) {
    if (HasMagicAt(input, pos)) {
      pos += kSnappyHeaderBytes;
      continue;
    }
    if (input.size() - pos < 4) {
      return Status::Corruption("snappy: truncated chunk length at byte " + std::to_string(pos));
    }
    const int32_t length = int32_t(LoadBe32(input.data() + pos));
    if (length < 0 || size_t(length) > input.size() - pos - 4) {
      return Status::Corruption("snappy: chunk length " + std::to_string(length) + " at byte " +
                                std::to_string(pos) + " exceeds the " +
                                std::to_string(input.size() - pos - 4) + " bytes remaining");
    }
    DARUMA_RETURN_IF_ERROR(
        AppendRawBlock(input.subspan(pos + 4, size_t(length)), pos + 4, max_output, out));
    pos += 4 + size_t(length);
  }
  return Status::Ok();
}

}  // namespace

Result<Bytes> SnappyDecompress(ByteSpan input, size_t max_output) {
  Bytes out;
  if (input.empty()) return out;
  if (HasMagicAt(input, 0)) {
    DARUMA_RETURN_IF_ERROR(DecompressFramed(input, max_output, &out));
  } else {
    DARUMA_RETURN_IF_ERROR(AppendRawBlock(input, 0, max_output, &out));
  }
  return out;
}

Result<Bytes> SnappyCompress(ByteSpan input) {
  Bytes out(kSnappyHeaderBytes);
  std::memcpy(out.data(), kXerialMagic, sizeof(kXerialMagic));
  StoreBe32(out.data() + 8, uint32_t(kXerialVersion));
  StoreBe32(out.data() + 12, uint32_t(kMinCompatibleVersion));
  for (size_t pos = 0; pos < input.size(); pos += kSnappyChunkBytes) {
    const size_t n = std::min(kSnappyChunkBytes, input.size() - pos);
    const size_t at = out.size();
    out.resize(at + 4 + snappy::MaxCompressedLength(n));
    size_t compressed = 0;
    snappy::RawCompress(reinterpret_cast<const char*>(input.data() + pos), n,
                        reinterpret_cast<char*>(out.data() + at + 4), &compressed);
    StoreBe32(out.data() + at, uint32_t(compressed));
    out.resize(at + 4 + compressed);
  }
  return out;
}

}  // namespace daruma
