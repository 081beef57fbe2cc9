#include "record/zstd_codec.h"

#include <zstd.h>

#include <algorithm>
#include <memory>
#include <string>

namespace daruma {
namespace {

constexpr size_t kZstdChunk = 64 * 1024;

struct DStreamDeleter {
  void operator()(ZSTD_DStream* ds) const { ZSTD_freeDStream(ds); }
};
struct CCtxDeleter {
  void operator()(ZSTD_CCtx* cctx) const { ZSTD_freeCCtx(cctx); }
};

// A reused stream bigger than this is freed after its call.
constexpr size_t kMaxKeptStreamBytes = size_t(8) << 20;

// Streams `input` through `ds` (reset) into at most max_output bytes.
Result<Bytes> DecompressWith(ZSTD_DStream* ds, ByteSpan input, size_t max_output) {
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  Bytes out;
  uint8_t chunk[kZstdChunk];
  while (true) {
    // One byte past the budget is enough to detect an overrun.
    const size_t room = max_output - out.size();
    const size_t want = room >= kZstdChunk ? kZstdChunk : room + 1;
    ZSTD_outBuffer ob{chunk, want, 0};
    const size_t rc = ZSTD_decompressStream(ds, &ob, &in);
    if (ZSTD_isError(rc)) {
      return Status::Corruption(std::string("zstd: ") + ZSTD_getErrorName(rc) + " at byte " +
                                std::to_string(in.pos));
    }
    if (out.size() + ob.pos > max_output) {
      return Status::TooLarge("zstd: decompressed size exceeds limit of " +
                              std::to_string(max_output) + " bytes");
    }
    out.insert(out.end(), chunk, chunk + ob.pos);
    const bool input_done = in.pos == in.size;
    // rc == 0: a frame ended and is fully flushed; a next frame may follow.
    if (rc == 0 && input_done) return out;
    if (input_done && ob.pos < ob.size) {
      return Status::Corruption("zstd: truncated frame at byte " + std::to_string(in.pos));
    }
  }
}

}  // namespace

// Each thread keeps one decompression stream and resets it per call (which
// also clears the error state a corrupt frame leaves): creating and freeing
// libzstd's context for every batch was 17 % of dump_fuzz's time on
// zstd-compressed inputs (perf, 2026-12-04), most of it in the allocator.
// The stream is held only between calls, taken out of the slot while in use,
// and a stream whose buffers grew past kMaxKeptStreamBytes (a frame that
// declared a large window) is freed rather than kept, so an idle thread holds
// little memory.
Result<Bytes> ZstdDecompress(ByteSpan input, size_t max_output) {
  if (input.empty()) return Status::Corruption("zstd: empty input");
  thread_local std::unique_ptr<ZSTD_DStream, DStreamDeleter> kept;
  std::unique_ptr<ZSTD_DStream, DStreamDeleter> ds = std::move(kept);
  if (ds != nullptr && ZSTD_isError(ZSTD_DCtx_reset(ds.get(), ZSTD_reset_session_only))) {
    ds.reset();
  }
  if (ds == nullptr) ds.reset(ZSTD_createDStream());
  if (ds == nullptr) return Status::Corruption("zstd: cannot create decompression stream");
  Result<Bytes> out = DecompressWith(ds.get(), input, max_output);
  if (ZSTD_sizeof_DStream(ds.get()) <= kMaxKeptStreamBytes) kept = std::move(ds);
  return out;
}

Result<Bytes> ZstdCompress(ByteSpan input, int level) {
  if (level < 0) level = kZstdDefaultLevel;
  std::unique_ptr<ZSTD_CCtx, CCtxDeleter> cctx(ZSTD_createCCtx());
  if (cctx == nullptr) return Status::InvalidArgument("zstd: cannot create compression context");
  const size_t set = ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel, level);
  if (ZSTD_isError(set)) {
    return Status::InvalidArgument("zstd: level " + std::to_string(level) + ": " +
                                   ZSTD_getErrorName(set));
  }
  Bytes out(ZSTD_compressBound(input.size()));
  const size_t n = ZSTD_compress2(cctx.get(), out.data(), out.size(), input.data(), input.size());
  if (ZSTD_isError(n)) return Status::InvalidArgument(std::string("zstd: ") + ZSTD_getErrorName(n));
  out.resize(n);
  return out;
}

}  // namespace daruma
