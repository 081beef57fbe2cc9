#include "protocol/response_frame.h"

#include <fmt/format.h>

namespace daruma {

size_t ResponseFrame::size() const {
  size_t total = bytes.size();
  for (const Splice& s : splices) total += size_t(s.slice.length);
  return total;
}

Result<Bytes> ResponseFrame::Flatten() const {
  Bytes out;
  out.reserve(size());
  size_t from = 0;
  for (const Splice& s : splices) {
    out.insert(out.end(), bytes.begin() + ptrdiff_t(from), bytes.begin() + ptrdiff_t(s.at));
    from = s.at;
    const size_t at = out.size();
    out.resize(at + size_t(s.slice.length));
    DARUMA_ASSIGN_OR_RETURN(
        size_t n, s.slice.file->ReadAt(s.slice.position, std::span<uint8_t>(out).subspan(at)));
    if (n != s.slice.length) {
      return Status::IoError(fmt::format("{}: read {} bytes at position {}, expected {}",
                                         s.slice.file->path(), n, s.slice.position,
                                         s.slice.length));
    }
  }
  out.insert(out.end(), bytes.begin() + ptrdiff_t(from), bytes.end());
  return out;
}

}  // namespace daruma
