// DirLock: the exclusive lock on `<log dir>/.lock` that a broker holds while it
// uses a log directory (spec §9.1, §10.1 step 2).
//
// The lock is a BSD flock(2) on an open descriptor of `.lock` (created empty if
// missing): it belongs to the open file description, so a second Acquire in
// the same process conflicts exactly like another process would, and the
// kernel drops it if the process dies. Kafka uses FileChannel.tryLock, a POSIX
// record lock; the two do not see each other, so Daruma and a Kafka broker on
// the same directory are NOT mutually excluded by this lock.
//
// This is the one place the recovery layer calls the OS directly: locking is
// not part of the FileSystem interface (no data passes through it).
#pragma once

#include <memory>
#include <string>

#include "common/status.h"

namespace daruma {

inline constexpr char kLockFileName[] = ".lock";

class DirLock {
 public:
  // Locks `log_dir`/.lock without waiting. kIoError naming the directory when
  // the lock is held elsewhere ("another process uses it") or the file cannot
  // be opened.
  static Result<std::unique_ptr<DirLock>> Acquire(const std::string& log_dir);
  ~DirLock();  // releases the lock
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  const std::string& path() const { return path_; }
  // True when the failure of Acquire meant "held by someone else".
  static bool IsHeldElsewhere(const Status& status);

 private:
  DirLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

}  // namespace daruma
