// A real `daruma serve` child process for the end-to-end benchmarks
// (broker_bench, group_commit_bench): free loopback ports, a scratch data
// dir, and the broker's CPU time from /proc.
#pragma once

#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace daruma::bench {

inline uint16_t FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

inline bool CanConnect(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(port);
  const bool ok = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  return ok;
}

// `daruma serve` (the binary `bin`) in a scratch dir under $TMPDIR, with
// `extra_properties` (server.properties lines) added to its config; stopped
// with SIGTERM and its dir removed on destruction. ok() is false when it did
// not start (its log names why).
class BrokerProcess {
 public:
  explicit BrokerProcess(const std::string& bin, const std::string& extra_properties = "") {
    Start(bin, extra_properties);
  }
  BrokerProcess(const BrokerProcess&) = delete;
  BrokerProcess& operator=(const BrokerProcess&) = delete;
  bool ok() const { return pid_ > 0; }
  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(port_); }
  pid_t pid() const { return pid_; }
  uint16_t port() const { return port_; }
  // utime + stime of the broker, in seconds.
  double CpuSeconds() const {
    std::ifstream in("/proc/" + std::to_string(pid_) + "/stat");
    std::string stat((std::istreambuf_iterator<char>(in)), {});
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));
    std::string f;
    long ticks = 0;
    for (int i = 3; i <= 15 && fields >> f; ++i) {
      if (i == 14 || i == 15) ticks += std::stol(f);  // utime, stime
    }
    return double(ticks) / double(::sysconf(_SC_CLK_TCK));
  }

  ~BrokerProcess() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
    }
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

 private:
  void Start(const std::string& bin, const std::string& extra_properties) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/daruma-broker-bench-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) return;
    dir_ = pattern;
    port_ = FreePort();
    const std::string config = dir_ + "/server.properties";
    std::ofstream(config) << "log.dirs=" << dir_
                          << "/data\nlisteners=PLAINTEXT://127.0.0.1:" << port_
                          << "\ndaruma.http.listener=127.0.0.1:" << FreePort()
                          << "\nnum.partitions=1\n"
                          << extra_properties;
    const std::string log = dir_ + "/daruma.log";
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT, 0644);
    std::vector<std::string> args = {bin, "serve", "--config", config};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    if (posix_spawn(&pid_, bin.c_str(), &actions, nullptr, argv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&actions);
    for (int i = 0; i < 400 && pid_ > 0 && !CanConnect(port_); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
    }
    if (pid_ > 0 && !CanConnect(port_)) {
      std::fprintf(stderr, "bench: %s did not start; see %s\n", bin.c_str(), log.c_str());
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

  std::string dir_;
  uint16_t port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace daruma::bench
