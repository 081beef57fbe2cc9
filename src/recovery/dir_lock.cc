#include "recovery/dir_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/file_system.h"

namespace daruma {
namespace {

constexpr char kHeldElsewhere[] = "is locked by another process";
// The Status detail of every "held by another process" failure, which
// IsHeldElsewhere reads (no caller parses the message).
constexpr int kHeldElsewhereDetail = 1;

struct flock WholeFileWriteLock() {
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = 0;
  lock.l_len = 0;  // to the end of the file, however long it grows
  lock.l_pid = 0;  // required by the F_OFD_* commands
  return lock;
}

Status HeldByRecordLock(const std::string& dir, const std::string& path, pid_t pid) {
  // A POSIX record lock (Kafka's) has an owning pid; an open-file-description
  // lock (another Daruma's) reports -1.
  if (pid <= 0) {
    return Status::IoError("log dir " + dir + " " + kHeldElsewhere + " (" + path +
                           " is held by another Daruma process)")
        .WithDetail(kHeldElsewhereDetail);
  }
  return Status::IoError("log dir " + dir + " " + kHeldElsewhere + " (" + path +
                         " is held by process " + std::to_string(pid) +
                         " with a record lock, as a running Kafka broker holds it); stop that "
                         "broker first")
      .WithDetail(kHeldElsewhereDetail);
}

// Who holds a record lock conflicting with a write lock on all of `fd`.
struct LockProbe {
  int error = 0;  // errno of the probe itself, 0 when it ran
  bool held = false;
  pid_t pid = -1;  // the holder of a POSIX record lock; -1 for an OFD lock
};

LockProbe ProbeRecordLock(int fd) {
  struct flock probe = WholeFileWriteLock();
  if (::fcntl(fd, F_OFD_GETLK, &probe) != 0) return {errno, false, -1};
  if (probe.l_type == F_UNLCK) return {};
  return {0, true, probe.l_pid};
}

// A file system without record locks: nothing to see, nothing to take.
bool NoRecordLocks(int err) {
  return err == EINVAL || err == ENOLCK;
}

}  // namespace

Result<std::unique_ptr<DirLock>> DirLock::Acquire(const std::string& log_dir) {
  const std::string path = JoinPath(log_dir, kLockFileName);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IoError("cannot open lock file " + path + ": " + std::strerror(errno));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK) {
      return Status::IoError("log dir " + log_dir + " " + kHeldElsewhere + " (" + path +
                             " is held); another Daruma or broker process uses this directory")
          .WithDetail(kHeldElsewhereDetail);
    }
    return Status::IoError("cannot lock " + path + ": " + std::strerror(err));
  }
  struct flock lock = WholeFileWriteLock();
  if (::fcntl(fd, F_OFD_SETLK, &lock) != 0) {
    const int err = errno;
    if (err == EAGAIN || err == EACCES) {
      const LockProbe holder = ProbeRecordLock(fd);
      ::close(fd);
      return HeldByRecordLock(log_dir, path, holder.pid);
    }
    // Without record locks the flock alone still excludes other Daruma
    // processes.
    if (!NoRecordLocks(err)) {
      ::close(fd);
      return Status::IoError("cannot lock " + path + ": " + std::strerror(err));
    }
  }
  return std::unique_ptr<DirLock>(new DirLock(fd, path));
}

DirLock::~DirLock() {
  ::flock(fd_, LOCK_UN);
  ::close(fd_);  // drops the record lock with the last descriptor
}

bool DirLock::IsHeldElsewhere(const Status& status) {
  return status.IsIoError() && status.detail() == kHeldElsewhereDetail;
}

Status DirLock::CheckNotHeld(const std::string& dir) {
  const std::string path = JoinPath(dir, kLockFileName);
  // Read-only: the probe needs no write access and must not create `.lock`.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Status::Ok();
    return Status::IoError("cannot open lock file " + path + ": " + std::strerror(errno));
  }
  const LockProbe probe = ProbeRecordLock(fd);
  ::close(fd);
  if (probe.error != 0 && !NoRecordLocks(probe.error)) {
    return Status::IoError("cannot probe the lock on " + path + ": " + std::strerror(probe.error));
  }
  return probe.held ? HeldByRecordLock(dir, path, probe.pid) : Status::Ok();
}

}  // namespace daruma
