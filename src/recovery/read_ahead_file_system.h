// ReadAheadFileSystem: makes the disk read a partition's segments while the
// CPU checks them, for `daruma check` (recovery/log_checker.h).
//
// A FileSystem decorator given a partition's files (snapshots, indexes,
// `.log`s) in the order they are read. Reads (ReadAt) of those files through
// it record how far the reader got: the files laid end to end, the reader is
// at byte C. WaitUntilRead lets a second reader follow the first one while
// the pages are still cached. With a window, a background thread keeps
// File::WillNeed issued for [C, C + window), in chunks, so the kernel fetches
// the next segment(s) while the current one is being CRC-checked; WillNeed
// may block while the reads queue, which is why it runs on its own thread.
// (Measured on the benchmark VM, the kernel's own sequential readahead beat
// WillNeed, 1.7 vs 1.1 GB/s, so the checker passes window 0 by default.)
//
// Invariants:
//  * the read-ahead never runs more than `window` bytes beyond the furthest
//    byte read, and never issues WillNeed twice for the same byte;
//  * it never writes, and never drops pages (whoever reads them decides
//    when, e.g. after a second pass over them);
//  * files other than the listed segments pass through untouched.
// The thread stops in the destructor; the decorator must outlive every File
// it opened.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "common/forwarding_file_system.h"

namespace daruma {

class ReadAheadFileSystem : public ForwardingFileSystem {
 public:
  static constexpr uint64_t kDefaultWindow = uint64_t{256} << 20;
  static constexpr uint64_t kChunk = uint64_t{8} << 20;

  // `segments`: the paths in reading order. No thread is started when there
  // is nothing to read ahead or `window` is 0 (tracking only).
  ReadAheadFileSystem(FileSystem* base, std::vector<std::string> segments,
                      uint64_t window = kDefaultWindow);
  ~ReadAheadFileSystem() override;
  ReadAheadFileSystem(const ReadAheadFileSystem&) = delete;
  ReadAheadFileSystem& operator=(const ReadAheadFileSystem&) = delete;

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override;

  // Blocks until the reader has read through the end of segment `path` or
  // Finish() was called; returns at once for a path not among the segments.
  // Lets a second reader follow the first one while its pages are cached.
  void WaitUntilRead(const std::string& path);
  // The first reader is done (or gave up): no WaitUntilRead blocks any more.
  void Finish();

  // Bytes below which every WillNeed has returned (or the byte was read
  // before its turn came), for tests: a caller that sees N here also sees
  // the WillNeed calls for [0, N) in a recording file system.
  uint64_t advised_bytes() const;

 private:
  class TrackingFile;
  struct Segment {
    std::string path;
    uint64_t start = 0;  // of the segment, in the segments laid end to end
    uint64_t size = 0;
    std::unique_ptr<File> file;  // opened by the read-ahead thread
  };

  void OnRead(size_t segment, uint64_t end_in_segment);
  void Run();
  void Advise(uint64_t from, uint64_t to);

  std::vector<Segment> segments_;
  uint64_t total_ = 0;
  uint64_t window_;
  mutable std::mutex mu_;
  std::condition_variable cv_;       // wakes the read-ahead thread
  std::condition_variable read_cv_;  // wakes WaitUntilRead
  uint64_t consumed_ = 0;            // furthest byte read, in the segments laid end to end
  uint64_t advised_ = 0;             // WillNeed issued or claimed for [0, advised_)
  uint64_t advice_done_ = 0;         // every WillNeed below this has returned
  bool stopping_ = false;
  bool finished_ = false;
  std::thread thread_;
};

}  // namespace daruma
