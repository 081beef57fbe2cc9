// A Kafka broker's lock on its log dir, for tests: Kafka locks `<dir>/.lock`
// with FileChannel.tryLock, which on Linux is a POSIX record lock
// (fcntl F_SETLK, F_WRLCK, the whole file) owned by the broker's process.
// Record locks of one process never conflict with each other, so the lock is
// taken in a forked child, which does only async-signal-safe calls.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <string>

namespace daruma::testing {

namespace record_lock_internal {

// In the child: opens `path` (created) and tries Kafka's lock; true if held.
inline bool TryKafkaLock(const char* path) {
  const int fd = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  return ::fcntl(fd, F_SETLK, &lock) == 0;
}

}  // namespace record_lock_internal

// Holds Kafka's lock on `path` in a child process until destroyed.
class RecordLockHolder {
 public:
  explicit RecordLockHolder(const std::string& path) {
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(fds[0]);
      const char held = record_lock_internal::TryKafkaLock(path.c_str()) ? '1' : '0';
      (void)!::write(fds[1], &held, 1);
      for (;;) ::pause();  // until the parent kills it
    }
    ::close(fds[1]);
    char held = '0';
    if (pid_ > 0 && ::read(fds[0], &held, 1) == 1) holding_ = held == '1';
    ::close(fds[0]);
  }
  ~RecordLockHolder() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  RecordLockHolder(const RecordLockHolder&) = delete;
  RecordLockHolder& operator=(const RecordLockHolder&) = delete;

  bool holding() const { return holding_; }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  bool holding_ = false;
};

// Whether a Kafka broker starting now could lock `path` (tried, and
// released, in a child process).
inline bool KafkaCouldLock(const std::string& path) {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(record_lock_internal::TryKafkaLock(path.c_str()) ? 0 : 1);
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return false;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace daruma::testing
