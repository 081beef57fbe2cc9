#include "record/gzip_codec.h"

#include <zlib.h>

#include <algorithm>
#include <string>

namespace daruma {
namespace {

constexpr size_t kChunk = 64 * 1024;
constexpr uint8_t kGzipMagic0 = 0x1f;
constexpr uint8_t kGzipMagic1 = 0x8b;
// The JDK's header: deflate, no flags, MTIME 0, XFL 0, OS 255 ("unknown").
constexpr uint8_t kJdkHeader[10] = {0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xff};

// Owns a z_stream set up for inflate, so every exit path releases it.
class Inflater {
 public:
  Inflater() = default;
  ~Inflater() {
    if (initialized_) inflateEnd(&zs_);
  }
  Inflater(const Inflater&) = delete;
  Inflater& operator=(const Inflater&) = delete;

  bool Init() {
    // 16 + 15: gzip wrapper only, 32 KiB window.
    initialized_ = inflateInit2(&zs_, 16 + MAX_WBITS) == Z_OK;
    return initialized_;
  }
  z_stream* stream() { return &zs_; }

 private:
  z_stream zs_{};
  bool initialized_ = false;
};

std::string ZlibMessage(const z_stream& zs, int rc) {
  return zs.msg != nullptr ? std::string(zs.msg) : "zlib error " + std::to_string(rc);
}

bool StartsAnotherMember(ByteSpan rest) {
  return rest.size() >= 2 && rest[0] == kGzipMagic0 && rest[1] == kGzipMagic1;
}

}  // namespace

Result<Bytes> GzipDecompress(ByteSpan input, size_t max_output) {
  if (input.empty()) return Status::Corruption("gzip: empty input");
  Inflater inflater;
  if (!inflater.Init()) return Status::Corruption("gzip: cannot initialize zlib inflater");
  z_stream* zs = inflater.stream();
  zs->next_in = const_cast<Bytef*>(input.data());
  zs->avail_in = static_cast<uInt>(input.size());

  Bytes out;
  uint8_t chunk[kChunk];
  while (true) {
    // One byte past the budget is enough to detect an overrun.
    const size_t room = max_output - out.size();
    const size_t want = room >= kChunk ? kChunk : room + 1;
    zs->next_out = chunk;
    zs->avail_out = static_cast<uInt>(want);
    const int rc = inflate(zs, Z_NO_FLUSH);
    const size_t produced = want - zs->avail_out;
    if (out.size() + produced > max_output) {
      return Status::TooLarge("gzip: decompressed size exceeds limit of " +
                              std::to_string(max_output) + " bytes");
    }
    out.insert(out.end(), chunk, chunk + produced);
    const size_t consumed = input.size() - zs->avail_in;
    if (rc == Z_STREAM_END) {
      ByteSpan rest = input.subspan(consumed);
      if (!StartsAnotherMember(rest)) return out;
      inflateReset(zs);
      continue;
    }
    if (rc == Z_OK) continue;
    // With output space available, "no progress" means the input ran out.
    if (rc == Z_BUF_ERROR && zs->avail_in == 0) {
      return Status::Corruption("gzip: truncated stream at byte " + std::to_string(consumed));
    }
    return Status::Corruption("gzip: " + ZlibMessage(*zs, rc) + " at byte " +
                              std::to_string(consumed));
  }
}

Result<Bytes> GzipCompress(ByteSpan input, int level) {
  if (level < 0) level = kGzipDefaultLevel;
  if (level > 9) return Status::InvalidArgument("gzip: level " + std::to_string(level) + " > 9");
  z_stream zs{};
  // Raw deflate (negative window bits); the header and trailer are written by
  // hand so the bytes match the JDK's.
  if (deflateInit2(&zs, level, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return Status::InvalidArgument("gzip: cannot initialize zlib deflater");
  }
  const uLong bound = deflateBound(&zs, static_cast<uLong>(input.size()));
  Bytes out(sizeof(kJdkHeader) + bound + 8);
  std::copy(std::begin(kJdkHeader), std::end(kJdkHeader), out.begin());
  zs.next_in = const_cast<Bytef*>(input.data());
  zs.avail_in = static_cast<uInt>(input.size());
  zs.next_out = out.data() + sizeof(kJdkHeader);
  zs.avail_out = static_cast<uInt>(bound);
  const int rc = deflate(&zs, Z_FINISH);
  const size_t deflated = zs.total_out;
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) return Status::InvalidArgument("gzip: deflate failed");
  out.resize(sizeof(kJdkHeader) + deflated);
  const uint32_t crc = static_cast<uint32_t>(crc32(0L, input.data(), input.size()));
  const uint32_t isize = static_cast<uint32_t>(input.size());
  for (uint32_t word : {crc, isize}) {
    for (int i = 0; i < 4; ++i) out.push_back(uint8_t(word >> (8 * i)));
  }
  return out;
}

}  // namespace daruma
