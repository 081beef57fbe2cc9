#include "broker/fatal_signals.h"

#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <mutex>
#include <string_view>

#include "broker/request_metrics.h"
#include "common/sanitizers.h"

namespace daruma::broker {
namespace {

std::atomic<int> g_last_api_key{-1};
std::atomic<bool> g_exit_expected{false};
const char* g_prefix = "daruma";

// write(2) of a whole string, retrying on EINTR and short writes.
void WriteAll(std::string_view text) {
  while (!text.empty()) {
    const ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    text.remove_prefix(size_t(n));
  }
}

// Decimal digits of v into buf (no allocation: signal handlers use it).
std::string_view FormatInt(int v, std::array<char, 16>& buf) {
  char* end = buf.data() + buf.size();
  char* p = end;
  const bool negative = v < 0;
  unsigned u = negative ? 0u - unsigned(v) : unsigned(v);
  do {
    *--p = char('0' + u % 10);
    u /= 10;
  } while (u != 0);
  if (negative) *--p = '-';
  return {p, size_t(end - p)};
}

std::string_view SignalName(int signo) {
  switch (signo) {
    case SIGSEGV:
      return "SIGSEGV";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGABRT:
      return "SIGABRT";
    default:
      return "signal";
  }
}

// "<prefix>: <what>; last request started: <Kind> (api key N)\n"
void ReportDeath(std::string_view what) {
  std::array<char, 16> digits;
  WriteAll(g_prefix);
  WriteAll(": ");
  WriteAll(what);
  const int key = g_last_api_key.load(std::memory_order_relaxed);
  if (key < 0) {
    WriteAll("; no request had been read yet");
  } else {
    WriteAll("; last request started: ");
    WriteAll(ApiKeyName(int16_t(key)));  // a switch over literals: signal-safe
    WriteAll(" (api key ");
    WriteAll(FormatInt(key, digits));
    WriteAll(")");
  }
  WriteAll(". The next start recovers the logs as after a crash and counts an unclean start.\n");
}

void OnFatalSignal(int signo) {
  std::array<char, 16> digits;
  WriteAll(g_prefix);
  WriteAll(": fatal signal ");
  WriteAll(SignalName(signo));
  WriteAll(" (");
  WriteAll(FormatInt(signo, digits));
  WriteAll(")\n");
  ReportDeath("dying of that signal");
  // SA_RESETHAND restored the default action: the signal now ends the
  // process the way it would have without us (core dump included).
  ::raise(signo);
}

void OnTerminate() {
  std::string_view what = "std::terminate called (no active exception)";
  if (std::exception_ptr e = std::current_exception()) {
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& ex) {
      WriteAll(g_prefix);
      WriteAll(": uncaught exception: ");
      WriteAll(ex.what());
      WriteAll("\n");
      what = "std::terminate called for an uncaught exception";
    } catch (...) {
      what = "std::terminate called for an uncaught non-standard exception";
    }
  }
  ReportDeath(what);
  std::abort();
}

void OnExit() {
  if (g_exit_expected.load()) return;
  ReportDeath("exit() called while serving, before a clean shutdown");
}

}  // namespace

void IgnoreSigpipe() {
  static std::once_flag once;
  std::call_once(once, [] { ::signal(SIGPIPE, SIG_IGN); });
}

void InstallFatalSignalReporting(const char* prefix) {
  static std::once_flag once;
  std::call_once(once, [prefix] {
    g_prefix = prefix;
    IgnoreSigpipe();
    // An alternate stack, so a stack overflow can still be reported: on the
    // main thread only (a static buffer must never become the alternate
    // stack of a thread that exits), and not under AddressSanitizer, which
    // manages threads' alternate stacks itself and unmaps them at exit.
    if (!kAddressSanitizer && ::gettid() == ::getpid()) {
      static std::array<char, 64 * 1024> alt_stack;
      stack_t ss{};
      ss.ss_sp = alt_stack.data();
      ss.ss_size = alt_stack.size();
      ::sigaltstack(&ss, nullptr);
    }
    struct sigaction sa {};
    sa.sa_handler = OnFatalSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_ONSTACK;
    for (int signo : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) ::sigaction(signo, &sa, nullptr);
    std::set_terminate(OnTerminate);
    std::atexit(OnExit);
  });
}

void ExpectExit() {
  g_exit_expected = true;
}

void NoteRequestKind(int16_t api_key) {
  g_last_api_key.store(api_key, std::memory_order_relaxed);
}

}  // namespace daruma::broker
