#include "common/mapped_append_window.h"

#include <algorithm>
#include <cstring>

namespace daruma {

Result<bool> MappedAppendWindow::Store(File& file, uint64_t position, ByteSpan bytes,
                                       uint64_t limit) {
  if (unsupported_) return false;
  const uint64_t end = position + bytes.size();
  if (end > limit) return false;
  if (!Covers(position, bytes.size())) {
    Release();
    const uint64_t len =
        std::max<uint64_t>(bytes.size(), std::min(next_window_bytes_, limit - position));
    DARUMA_ASSIGN_OR_RETURN(region_, file.MapForAppend(position, size_t(len), faults_));
    start_ = position;
    if (!region_) {
      unsupported_ = true;
      return false;
    }
    next_window_bytes_ = std::min(window_bytes_, next_window_bytes_ * 2);
  }
  std::memcpy(region_->data + (position - start_), bytes.data(), bytes.size());
  return true;
}

}  // namespace daruma
