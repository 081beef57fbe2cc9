#include "record/compression.h"

#include <algorithm>
#include <string>

#include "record/gzip_codec.h"
#include "record/lz4_codec.h"
#include "record/snappy_codec.h"
#include "record/zstd_codec.h"

namespace daruma {
namespace {

// zstd exists only in magic v2 batches (spec §4).
Status CheckZstdMagic(int8_t magic) {
  if (magic < 2) {
    return Status::Corruption("zstd: compression is not allowed with magic " +
                              std::to_string(magic) + " (requires magic 2)");
  }
  return Status::Ok();
}

}  // namespace

size_t MaxDecompressedBytesFor(int64_t max_message_bytes) {
  const int64_t bound = std::max<int64_t>(max_message_bytes, 0) * 64;
  return size_t(std::clamp<int64_t>(bound, int64_t(kDefaultMaxDecompressedBytes),
                                    int64_t(kToolMaxDecompressedBytes)));
}

std::string_view CompressionName(CompressionType type) {
  switch (type) {
    case CompressionType::kNone:
      return "none";
    case CompressionType::kGzip:
      return "gzip";
    case CompressionType::kSnappy:
      return "snappy";
    case CompressionType::kLz4:
      return "lz4";
    case CompressionType::kZstd:
      return "zstd";
  }
  switch (static_cast<int>(type)) {
    case 5:
      return "unknown(5)";
    case 6:
      return "unknown(6)";
    case 7:
      return "unknown(7)";
  }
  return "unknown";
}

std::optional<CompressionType> CompressionFromName(std::string_view name) {
  for (int id = 0; id <= 4; ++id) {
    const auto type = static_cast<CompressionType>(id);
    if (CompressionName(type) == name) return type;
  }
  return std::nullopt;
}

std::optional<CompressionType> CompressionFromId(int id) {
  if (id < 0 || id > 4) return std::nullopt;
  return static_cast<CompressionType>(id);
}

Result<Bytes> Decompress(CompressionType type, ByteSpan input, size_t max_output, int8_t magic) {
  switch (type) {
    case CompressionType::kNone:
      if (input.size() > max_output) {
        return Status::TooLarge("none: size " + std::to_string(input.size()) +
                                " exceeds limit of " + std::to_string(max_output) + " bytes");
      }
      return Bytes(input.begin(), input.end());
    case CompressionType::kGzip:
      return GzipDecompress(input, max_output);
    case CompressionType::kSnappy:
      return SnappyDecompress(input, max_output);
    case CompressionType::kLz4:
      return Lz4Decompress(input, max_output, magic);
    case CompressionType::kZstd:
      DARUMA_RETURN_IF_ERROR(CheckZstdMagic(magic));
      return ZstdDecompress(input, max_output);
  }
  return Status::Corruption("unknown compression codec id " + std::to_string(int(type)));
}

Result<Bytes> Compress(CompressionType type, ByteSpan input, int8_t magic, int level) {
  switch (type) {
    case CompressionType::kNone:
      return Bytes(input.begin(), input.end());
    case CompressionType::kGzip:
      return GzipCompress(input, level);
    case CompressionType::kSnappy:
      return SnappyCompress(input);
    case CompressionType::kLz4:
      return Lz4Compress(input, magic, level);
    case CompressionType::kZstd:
      if (magic < 2) {
        return Status::InvalidArgument("zstd: compression is not allowed with magic " +
                                       std::to_string(magic) + " (requires magic 2)");
      }
      return ZstdCompress(input, level);
  }
  return Status::InvalidArgument("unknown compression codec id " + std::to_string(int(type)));
}

}  // namespace daruma
