// ResponseFrame: one response frame (without its 4-byte size prefix) as
// inline bytes with ranges of files spliced in between them, so a Fetch can
// send log bytes from the page cache straight to the socket (sendfile(2),
// Kafka's FileRecords.transferTo) instead of copying them into the frame.
//
// Layout: the frame is bytes[0, splices[0].at) + splices[0].slice +
// bytes[splices[0].at, splices[1].at) + ... + bytes[splices.back().at, end).
// Invariants: splices are in ascending `at` order, every at <= bytes.size(),
// and every slice's file has a descriptor (File::fd() >= 0) and holds at
// least position + length bytes, which must not change until the frame is
// sent (fetches only splice batches below the high watermark: immutable).
//
// A frame without splices is plain bytes; a Bytes converts implicitly.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "common/bytes.h"
#include "common/file_system.h"
#include "common/status.h"

namespace daruma {

// `length` bytes of `file` from `position`. The shared_ptr keeps the file
// (and its descriptor) open until the frame holding the slice is sent.
struct FileSlice {
  std::shared_ptr<const File> file;
  uint64_t position = 0;
  uint64_t length = 0;
  bool operator==(const FileSlice&) const = default;
};

struct ResponseFrame {
  struct Splice {
    size_t at = 0;  // index into `bytes` the slice is inserted before
    FileSlice slice;
    bool operator==(const Splice&) const = default;
  };

  ResponseFrame() = default;
  ResponseFrame(Bytes b) : bytes(std::move(b)) {}  // NOLINT: implicit by design

  // Bytes on the wire (without the size prefix).
  size_t size() const;
  // The whole frame in one buffer, the slices read with File::ReadAt (tests,
  // and peers of the frame that cannot splice). kIoError on a short read.
  Result<Bytes> Flatten() const;

  Bytes bytes;
  std::vector<Splice> splices;
};

}  // namespace daruma
