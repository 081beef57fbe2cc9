// Runs the real `daruma` binary (built beside the tests, DARUMA_BINARY_DIR)
// as a child process with its stdout and stderr in files, for tests of what a
// user or a script sees: exit codes and messages.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "support/test_support.h"

extern char** environ;

namespace daruma::tools::testcli {

inline std::string DarumaBinary() {
  return std::string(DARUMA_BINARY_DIR) + "/daruma";
}

struct CliResult {
  int rc = -1;  // the exit code; 128 + signal when killed; -1 when it never ended
  std::string out, err;

  // The first line of stderr (without its newline), "" when there is none.
  std::string FirstErrLine() const { return err.substr(0, err.find('\n')); }
};

class CliProcess {
 public:
  // Starts `daruma args...` with stdout and stderr in files under `dir`.
  CliProcess(const std::string& dir, const std::vector<std::string>& args)
      : out_path_(dir + "/cli.stdout"), err_path_(dir + "/cli.stderr") {
    const std::string bin = DarumaBinary();
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
    std::vector<std::string> all = {bin};
    all.insert(all.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : all) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, bin.c_str(), &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
  }
  ~CliProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  CliProcess(const CliProcess&) = delete;
  CliProcess& operator=(const CliProcess&) = delete;

  bool started() const { return pid_ > 0 || rc_ >= 0; }
  std::string Err() const { return daruma::testing::ReadFileToString(err_path_); }

  // Waits until stderr contains `text` (true) or the process ends or
  // `seconds` pass (false).
  bool WaitForErr(const std::string& text, int seconds) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      if (Err().find(text) != std::string::npos) return true;
      if (Reap(false)) return Err().find(text) != std::string::npos;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return false;
  }

  // Sends `signo` while the process runs.
  void Signal(int signo) {
    if (pid_ > 0) ::kill(pid_, signo);
  }

  // Waits up to `seconds` for the exit, then SIGKILLs it (rc -1).
  CliResult Finish(int seconds = 60) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
    while (!Reap(false) && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
    CliResult r;
    r.rc = rc_;
    r.out = daruma::testing::ReadFileToString(out_path_);
    r.err = Err();
    return r;
  }

 private:
  // True once the process has ended (rc_ set).
  bool Reap(bool block) {
    if (pid_ <= 0) return true;
    int status = 0;
    if (::waitpid(pid_, &status, block ? 0 : WNOHANG) != pid_) return false;
    pid_ = -1;
    rc_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return true;
  }

  std::string out_path_, err_path_;
  pid_t pid_ = -1;
  int rc_ = -1;
};

// Runs `daruma args...` to completion (at most `seconds`).
inline CliResult RunDaruma(const std::string& dir, const std::vector<std::string>& args,
                           int seconds = 60) {
  CliProcess p(dir, args);
  return p.Finish(seconds);
}

}  // namespace daruma::tools::testcli
