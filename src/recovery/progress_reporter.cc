#include "recovery/progress_reporter.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>

namespace daruma {
namespace {

constexpr auto kTtyInterval = std::chrono::milliseconds(200);
constexpr auto kPlainInterval = std::chrono::seconds(2);
constexpr int kBarWidth = 24;

// Fraction done: by bytes when there are bytes to scan, else by logs.
double Fraction(const ProgressSnapshot& s) {
  if (s.total_logs > 0 && s.remaining_logs == 0) return 1.0;
  double f = 0;
  if (s.total_bytes > 0) {
    f = double(s.scanned_bytes) / double(s.total_bytes);
  } else if (s.total_logs > 0) {
    f = double(s.total_logs - s.remaining_logs) / double(s.total_logs);
  }
  return std::clamp(f, 0.0, 0.99);
}

}  // namespace

std::string HumanBytes(int64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (std::abs(value) >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  if (unit == 0) return fmt::format("{} B", bytes);
  return fmt::format("{:.1f} {}", value, kUnits[unit]);
}

std::string HumanDuration(double seconds) {
  const int64_t s = int64_t(std::llround(std::max(seconds, 0.0)));
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m{:02}s", s / 60, s % 60);
  return fmt::format("{}h{:02}m", s / 3600, (s % 3600) / 60);
}

std::string FormatProgressLine(const ProgressSnapshot& s, double elapsed_seconds, bool bar,
                               ProgressLabel label) {
  const double fraction = Fraction(s);
  const double rate = elapsed_seconds > 0 ? double(s.scanned_bytes) / elapsed_seconds : 0;
  std::string eta = "--";
  if (rate > 0 && s.total_bytes > s.scanned_bytes && s.remaining_logs > 0) {
    eta = HumanDuration(double(s.total_bytes - s.scanned_bytes) / rate);
  }
  const std::string numbers =
      fmt::format("{:3.0f}%  {} / {}  {:.1f} MB/s  ETA {}  logs left {}/{}", fraction * 100,
                  HumanBytes(s.scanned_bytes), HumanBytes(s.total_bytes), rate / 1e6, eta,
                  s.remaining_logs, s.total_logs);
  if (!bar) return fmt::format("{}: {}", label.plain, numbers);
  const int filled = int(fraction * kBarWidth);
  return std::string(label.bar) + " [" + std::string(size_t(filled), '#') +
         std::string(size_t(kBarWidth - filled), '.') + "] " + numbers;
}

ProgressReporter::ProgressReporter(Source source, ProgressMode mode, std::ostream& out,
                                   ProgressLabel label)
    : source_(std::move(source)), mode_(mode), label_(label), out_(out) {}

ProgressReporter::~ProgressReporter() {
  Stop();
}

void ProgressReporter::Start() {
  if (mode_ == ProgressMode::kQuiet || thread_.joinable()) return;
  thread_ = std::thread([this] { Run(); });
}

void ProgressReporter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (mode_ == ProgressMode::kTty && drawn_) {
    out_ << "\r\x1b[K" << std::flush;
    drawn_ = false;
  }
}

void ProgressReporter::Run() {
  const auto start = std::chrono::steady_clock::now();
  const auto interval = mode_ == ProgressMode::kTty
                            ? std::chrono::duration_cast<std::chrono::milliseconds>(kTtyInterval)
                            : std::chrono::duration_cast<std::chrono::milliseconds>(kPlainInterval);
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
    const std::chrono::duration<double> elapsed = std::chrono::steady_clock::now() - start;
    Emit(elapsed.count());
  }
}

void ProgressReporter::Emit(double elapsed_seconds) {
  const ProgressSnapshot s = source_();
  if (mode_ == ProgressMode::kTty) {
    out_ << '\r' << FormatProgressLine(s, elapsed_seconds, /*bar=*/true, label_) << "\x1b[K"
         << std::flush;
    drawn_ = true;
  } else {
    out_ << FormatProgressLine(s, elapsed_seconds, /*bar=*/false, label_) << '\n' << std::flush;
  }
}

}  // namespace daruma
