// LoadSnapshotCache: the bytes of the producer snapshots a load reads or
// writes, kept by the load's journaling file system (load_transaction.h) so
// that the load reads a snapshot from disk at most once.
//
// Why: a segment recovered on its own (its indexes missing or corrupt) gets a
// fresh producer state that reloads the snapshot at the segment's base, as
// Kafka's recoverSegment does, and the recovery of the segment before it has
// just read that file (to keep it, byte-identical) or written it; pass 6
// then reloads the snapshot the last recovery wrote. Each reload was an
// open, fstat, pread and close: at 1,000 crashed partitions with their
// indexes missing, 16 of a partition's ~120 system calls.
//
// Invariant: while the journal records, bytes served here are the file's
// content. Every change of a snapshot's content or name passes through the
// journaling file system, which forgets the entry before the change; a
// handle opened for writing forgets it too, and only a handle that wrote the
// file whole from empty (kTruncate, kCreateExclusive) with sequential writes,
// with no other writer, rename or removal of any snapshot in between, leaves
// what it wrote here when it closes.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/file_system.h"

namespace daruma {

class LoadSnapshotCache {
 public:
  // Whether `path` is a file this cache keeps (a producer snapshot).
  static bool Keeps(const std::string& path);

  std::optional<std::vector<uint8_t>> Get(const std::string& path) const;
  // Reads `path` through `fs` (a miss) and keeps the bytes unless a writer
  // or a name change came in between.
  Result<std::vector<uint8_t>> Read(FileSystem* fs, const std::string& path);

  // Before `path` changes name or is removed (or any snapshot: `path` empty).
  void Forget(const std::string& path);
  // `file`, opened on `path` in `mode` (not kRead), as the load must use it:
  // forgets `path` now, and keeps what the file wrote when it closes (see
  // the invariant).
  std::unique_ptr<File> Writing(const std::string& path, OpenMode mode, std::unique_ptr<File> file);

 private:
  class CapturingFile;
  void EndWrite(const std::string& path, uint64_t generation, const std::vector<uint8_t>* written);

  mutable std::mutex mu_;
  std::map<std::string, std::vector<uint8_t>> bytes_;
  std::map<std::string, int> writers_;
  // Bumped by every Forget: a read or write that began before one does not
  // leave its bytes.
  uint64_t generation_ = 0;
};

}  // namespace daruma
