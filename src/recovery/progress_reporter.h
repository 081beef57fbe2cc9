// ProgressReporter: shows start-up recovery progress on stderr while logs load
// (issue 4, "Better than Kafka" 5).
//
// Modes:
//   kTty    one line redrawn in place (\r + erase) every 200 ms: a bar, bytes
//           scanned / bytes to scan, MB/s, ETA and logs left; erased on Stop()
//           so the caller's summary starts on a clean line.
//   kPlain  one plain line every 2 s (logs, CI), nothing before the first 2 s.
//   kQuiet  nothing.
// The numbers come from a Source callback polled by the reporter's own thread;
// it must be cheap and thread-safe (atomic loads). Bytes to scan is an estimate,
// so the percentage is capped at 99% until the source reports zero logs left.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

namespace daruma {

struct ProgressSnapshot {
  int64_t scanned_bytes = 0;
  int64_t total_bytes = 0;  // estimate; 0 when nothing needs scanning
  int64_t remaining_logs = 0;
  int64_t total_logs = 0;
};

enum class ProgressMode { kQuiet, kTty, kPlain };

// What the line says is going on: "Recovering [###...]" on a terminal,
// "recovery: ..." in plain mode.
struct ProgressLabel {
  const char* bar = "Recovering";
  const char* plain = "recovery";
};
inline constexpr ProgressLabel kCheckProgressLabel{"Checking", "check"};
inline constexpr ProgressLabel kRepairProgressLabel{"Repairing", "repair"};

// "1.5 GiB", "812 KiB", "235 B".
std::string HumanBytes(int64_t bytes);
// "3s", "2m05s", "1h02m".
std::string HumanDuration(double seconds);
// The text of one progress line (without \r or newline).
std::string FormatProgressLine(const ProgressSnapshot& s, double elapsed_seconds, bool bar,
                               ProgressLabel label = {});

class ProgressReporter {
 public:
  using Source = std::function<ProgressSnapshot()>;

  ProgressReporter(Source source, ProgressMode mode, std::ostream& out, ProgressLabel label = {});
  ~ProgressReporter();  // Stop()
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  void Start();
  // Joins the thread; in kTty mode erases the progress line. Idempotent.
  void Stop();

 private:
  void Run();
  void Emit(double elapsed_seconds);

  Source source_;
  ProgressMode mode_;
  ProgressLabel label_;
  std::ostream& out_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  bool drawn_ = false;
  std::thread thread_;
};

}  // namespace daruma
