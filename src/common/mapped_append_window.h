// MappedAppendWindow: appends to a file by storing into a writable mapping of
// the range ahead of the write position (File::MapForAppend) instead of one
// write(2) per append. Used for preallocated segment .log files (8 MiB
// windows) and for index files (64 KiB windows).
//
// Contract:
//   * Store() puts `bytes` at `position` and returns true, or returns false
//     when they must be written with File::WriteAt instead: the bytes would
//     reach past `limit` (the size the caller lets the file have), or the file
//     cannot be mapped (a decorating or fault-injecting file system; then every
//     later Store returns false too). An error reserving blocks (a full disk)
//     is the Store's error, never a SIGBUS later.
//   * A window covers [start, start + min(size, limit - start)), where start
//     is the position of the Store that mapped it and size is
//     first_window_bytes for the first window, doubling with each window
//     after it up to window_bytes; a store outside it maps a new one. Appends
//     only move forwards, so the old one is dropped. (A small first window
//     keeps a small file small: the index of a segment that gets a few
//     entries reserves one block, not 64 KiB that trimming it at close frees
//     again, which waits for the device where freed blocks are discarded.)
//   * Release() drops the mapping. The caller must call it before shrinking
//     the file below the window's end, and before closing the file (declare
//     the window after the File it maps).
//   * The stored bytes are ordinary page-cache data, exactly as after WriteAt.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>

#include "common/bytes.h"
#include "common/file_system.h"
#include "common/status.h"

namespace daruma {

class MappedAppendWindow {
 public:
  explicit MappedAppendWindow(uint64_t window_bytes, AppendFaults faults = AppendFaults::kReadAhead,
                              uint64_t first_window_bytes = 0)
      : window_bytes_(window_bytes),
        next_window_bytes_(first_window_bytes == 0 ? window_bytes
                                                   : std::min(first_window_bytes, window_bytes)),
        faults_(faults) {}

  Result<bool> Store(File& file, uint64_t position, ByteSpan bytes, uint64_t limit);
  // Whether [position, position + n) lies in the current mapping, so that a
  // Store there is a copy, not a new mapping.
  bool Covers(uint64_t position, uint64_t n) const {
    return region_ && position >= start_ && position + n <= start_ + region_->size;
  }
  void Release() { region_.reset(); }

 private:
  uint64_t window_bytes_;
  uint64_t next_window_bytes_;  // the size of the next window mapped
  AppendFaults faults_;
  std::unique_ptr<WritableMappedRegion> region_;  // [start_, start_ + region_->size)
  uint64_t start_ = 0;
  bool unsupported_ = false;
};

}  // namespace daruma
