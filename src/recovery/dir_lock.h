// DirLock: the exclusive lock on `<log dir>/.lock` that a broker holds while it
// uses a log directory (spec §9.1, §10.1 step 2).
//
// Two locks on one open descriptor of `.lock` (created empty if missing):
//  * a BSD flock(2), Daruma's own: it belongs to the open file description,
//    so a second Acquire in the same process conflicts exactly like another
//    process would;
//  * a write record lock over the whole file taken with F_OFD_SETLK, for
//    Kafka: a Kafka broker locks `.lock` with FileChannel.tryLock, which on
//    Linux is a POSIX record lock (fcntl F_SETLK), and record locks conflict
//    with open-file-description locks. So Acquire fails while a Kafka broker
//    runs on the directory, and a Kafka broker started while Daruma holds it
//    fails to start ("Failed to acquire lock on file .lock").
// The kernel drops both if the process dies.
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
  // Locks `log_dir`/.lock without waiting. kIoError naming the directory and
  // the lock file when the lock is held elsewhere ("is locked by another
  // process"; a record lock names the holder's pid, Kafka's kind of lock) or
  // the file cannot be opened.
  static Result<std::unique_ptr<DirLock>> Acquire(const std::string& log_dir);
  ~DirLock();  // releases the lock
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  const std::string& path() const { return path_; }
  // True when the failure of Acquire or CheckNotHeld meant "held by someone
  // else".
  static bool IsHeldElsewhere(const Status& status);
  // Read-only: kIoError as Acquire's when another process holds a record
  // lock (Kafka's) on `dir`/.lock; OK when none does or there is no `.lock`.
  // Creates, locks and changes nothing (for a dir recovery must leave
  // untouched, such as Kafka's metadata.log.dir).
  static Status CheckNotHeld(const std::string& dir);

 private:
  DirLock(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}
  int fd_;
  std::string path_;
};

}  // namespace daruma
