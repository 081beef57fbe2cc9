// DarumaProcess: a `daruma serve` child process for the compat tests, on free
// loopback ports in a TempDir, with its stderr captured in a file.
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
#include <vector>

#include "server_test_util.h"
#include "support/test_support.h"

extern char** environ;

namespace daruma::broker::testing {

inline std::string DarumaBinary() {
  return std::string(DARUMA_BINARY_DIR) + "/daruma";
}

// The first `name` on $PATH, or "".
// Runs a shell command; its exit status (-1 when it did not exit normally).
inline int Shell(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

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

class DarumaProcess {
 public:
  // Writes `dir`/server.properties with `properties` plus log.dirs, listeners
  // and the HTTP listener on free ports.
  DarumaProcess(const std::string& dir, const std::string& properties)
      : dir_(dir), kafka_port_(FreePort()), http_port_(FreePort()) {
    config_ = dir + "/server.properties";
    daruma::testing::WriteStringToFile(
        config_, properties + "\nlog.dirs=" + dir +
                     "/data\nlisteners=PLAINTEXT://127.0.0.1:" + std::to_string(kafka_port_) +
                     "\ndaruma.http.listener=127.0.0.1:" + std::to_string(http_port_) + "\n");
  }
  ~DarumaProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  bool Start() {
    const std::string bin = DarumaBinary();
    const std::string log = dir_ + "/daruma.log";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
    std::vector<std::string> args = {bin, "serve", "--config", config_};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, bin.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    return rc == 0;
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
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return false;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // SIGTERM, then the exit code (-1 when it did not exit within 20 s).
  int Stop() { return SignalAndWait(SIGTERM); }

  // Sends `signo` and reaps the process: 128 + the terminating signal, the
  // exit code, or -1 when it did not end within 20 s.
  int SignalAndWait(int signo) {
    if (pid_ <= 0) return -1;
    ::kill(pid_, signo);
    for (int i = 0; i < 2000; ++i) {
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return -1;
  }

  // SIGKILL (no shutdown code runs: a crash), then reaps it. False when it was
  // not running.
  bool Kill() {
    if (pid_ <= 0) return false;
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    pid_ = -1;
    return true;
  }

  std::string Log() const { return daruma::testing::ReadFileToString(dir_ + "/daruma.log"); }
  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(kafka_port_); }
  uint16_t http_port() const { return http_port_; }
  pid_t pid() const { return pid_; }
  std::string data_dir() const { return dir_ + "/data"; }

 private:
  std::string dir_;
  std::string config_;
  uint16_t kafka_port_;
  uint16_t http_port_;
  pid_t pid_ = -1;
};

}  // namespace daruma::broker::testing
