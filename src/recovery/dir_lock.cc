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
                             " is held); another Daruma or broker process uses this directory");
    }
    return Status::IoError("cannot lock " + path + ": " + std::strerror(err));
  }
  return std::unique_ptr<DirLock>(new DirLock(fd, path));
}

DirLock::~DirLock() {
  ::flock(fd_, LOCK_UN);
  ::close(fd_);
}

bool DirLock::IsHeldElsewhere(const Status& status) {
  return status.message().find(kHeldElsewhere) != std::string::npos;
}

}  // namespace daruma
