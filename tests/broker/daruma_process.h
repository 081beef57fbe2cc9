// DarumaProcess: a `daruma serve` child process for the compat tests, on free
// loopback ports in a TempDir, with its stderr captured in a file.
// ChildProcess: any program as a child process with its output in a file (the
// real clients of the compat tests), which DarumaProcess runs the broker as.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <asio.hpp>
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "server_test_util.h"
#include "support/test_support.h"

extern char** environ;

namespace daruma::broker::testing {

inline std::string DarumaBinary() {
  return std::string(DARUMA_BINARY_DIR) + "/daruma";
}

// Runs a shell command; its exit status (-1 when it did not exit normally).
inline int Shell(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The first `name` on $PATH, or "".
inline std::string FindOnPath(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t colon = dirs.find(':', start);
    if (colon == std::string::npos) colon = dirs.size();
    const std::string candidate = dirs.substr(start, colon - start) + "/" + name;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
    start = colon + 1;
  }
  return "";
}

// A port that was free a moment ago (bind to 0, read it, close).
inline uint16_t FreePort() {
  asio::io_context io;
  asio::ip::tcp::acceptor a(io, {asio::ip::make_address("127.0.0.1"), 0});
  return a.local_endpoint().port();
}

// A free port other than `taken`: two FreePort() calls in a row may get the
// same port back, as the first one was closed again (a Kafka and an HTTP
// listener then collide, and the broker refuses to start).
inline uint16_t FreePortOtherThan(uint16_t taken) {
  uint16_t port = FreePort();
  while (port == taken) port = FreePort();
  return port;
}

// A child process (argv, no shell: its pid is the program's own, so Kill() is
// a SIGKILL of the program itself) with its output appended to a log file.
// SIGKILLed and reaped if still running at destruction.
class ChildProcess {
 public:
  // What goes to the log; the rest stays the test binary's.
  enum class Output { kStdoutAndStderr, kStderr };

  ChildProcess() = default;
  ChildProcess(std::vector<std::string> args, const std::string& log,
               Output output = Output::kStdoutAndStderr) {
    Spawn(std::move(args), log, output);
  }
  ~ChildProcess() { Kill(); }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  // Starts args[0] with `args`, when none runs. False when it could not.
  bool Spawn(std::vector<std::string> args, const std::string& log,
             Output output = Output::kStdoutAndStderr) {
    const int fd = output == Output::kStderr ? 2 : 1;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, fd, log.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                     0644);
    if (output == Output::kStdoutAndStderr) posix_spawn_file_actions_adddup2(&actions, 1, 2);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, argv[0], &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    return pid_ > 0;
  }

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // Whether it still runs; once it has ended it is reaped.
  bool Running() {
    if (pid_ <= 0) return false;
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) != pid_) return true;
    pid_ = -1;
    return false;
  }

  // Its exit code (128 + the signal that ended it) once it ends, polled every
  // `poll_ms`; -1 when it was not running or still runs after `timeout_ms`.
  int WaitForExit(int timeout_ms, int poll_ms) {
    if (pid_ <= 0) return -1;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      if (std::chrono::steady_clock::now() >= deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(poll_ms));
    }
  }

  // Its exit code (128 + the signal that ended it), or -1 when it was still
  // running after `timeout_s` seconds (it is then killed).
  int Wait(int timeout_s) {
    const int rc = WaitForExit(timeout_s * 1000, 50);
    if (rc < 0) Kill();
    return rc;
  }

  // Sends `signo`. False when it is not running.
  bool Signal(int signo) { return pid_ > 0 && ::kill(pid_, signo) == 0; }

  // SIGSTOP, and returns once the process (every thread of it) is stopped:
  // it sends, receives and writes nothing more until Thaw(). False when it
  // is not running or did not stop.
  bool Freeze() {
    if (!Signal(SIGSTOP)) return false;
    int status = 0;
    return ::waitpid(pid_, &status, WUNTRACED) == pid_ && WIFSTOPPED(status);
  }

  // SIGCONT: a frozen process goes on. False when it is not running.
  bool Thaw() { return Signal(SIGCONT); }

  // SIGKILL (no shutdown code runs: a crash), then reaps it. False when it
  // was not running.
  bool Kill() {
    if (pid_ <= 0) return false;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    return true;
  }

 private:
  pid_t pid_ = -1;
};

class DarumaProcess {
 public:
  // Writes `dir`/server.properties with `properties` plus log.dirs, listeners
  // and the HTTP listener on free ports.
  DarumaProcess(const std::string& dir, const std::string& properties)
      : dir_(dir), kafka_port_(FreePort()), http_port_(FreePortOtherThan(kafka_port_)) {
    config_ = dir + "/server.properties";
    daruma::testing::WriteStringToFile(
        config_, properties + "\nlog.dirs=" + dir +
                     "/data\nlisteners=PLAINTEXT://127.0.0.1:" + std::to_string(kafka_port_) +
                     "\ndaruma.http.listener=127.0.0.1:" + std::to_string(http_port_) + "\n");
  }

  // `daruma serve` with its stderr appended to `dir`/daruma.log.
  bool Start() {
    return process_.Spawn({DarumaBinary(), "serve", "--config", config_}, dir_ + "/daruma.log",
                          ChildProcess::Output::kStderr);
  }

  // Polls /health until it says 200 (serving), up to `seconds`.
  bool WaitServing(int seconds = 20) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      try {
        if (HttpGet(http_port_, "/health").status == 200) return true;
      } catch (const std::exception&) {
        // not listening yet
      }
      if (!process_.Running()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // SIGTERM, then the exit code (-1 when it did not exit within 20 s).
  int Stop() { return SignalAndWait(SIGTERM); }

  // Sends `signo` and reaps the process: 128 + the terminating signal, the
  // exit code, or -1 when it did not end within 20 s.
  int SignalAndWait(int signo) {
    if (!process_.Signal(signo)) return -1;
    return process_.WaitForExit(20000, 10);
  }

  // SIGKILL (no shutdown code runs: a crash), then reaps it. False when it was
  // not running.
  bool Kill() { return process_.Kill(); }

  std::string Log() const { return daruma::testing::ReadFileToString(dir_ + "/daruma.log"); }
  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(kafka_port_); }
  uint16_t http_port() const { return http_port_; }
  pid_t pid() const { return process_.pid(); }
  std::string data_dir() const { return dir_ + "/data"; }

 private:
  std::string dir_;
  std::string config_;
  uint16_t kafka_port_;
  uint16_t http_port_;
  ChildProcess process_;
};

}  // namespace daruma::broker::testing
