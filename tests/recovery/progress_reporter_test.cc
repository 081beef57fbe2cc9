// ProgressReporter: the line it prints and the modes.
#include "recovery/progress_reporter.h"

#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <thread>

namespace daruma {
namespace {

TEST(ProgressReporterTest, HumanUnits) {
  EXPECT_EQ(HumanBytes(235), "235 B");
  EXPECT_EQ(HumanBytes(6416), "6.3 KiB");
  EXPECT_EQ(HumanBytes(int64_t(3) << 30), "3.0 GiB");
  EXPECT_EQ(HumanDuration(4.4), "4s");
  EXPECT_EQ(HumanDuration(125), "2m05s");
  EXPECT_EQ(HumanDuration(3720), "1h02m");
}

TEST(ProgressReporterTest, LineShowsBytesRateEtaAndLogsLeft) {
  ProgressSnapshot s{
      .scanned_bytes = 500000000, .total_bytes = 1000000000, .remaining_logs = 3, .total_logs = 10};
  EXPECT_EQ(FormatProgressLine(s, 2.0, /*bar=*/false),
            "recovery:  50%  476.8 MiB / 953.7 MiB  250.0 MB/s  ETA 2s  logs left 3/10");
  EXPECT_EQ(FormatProgressLine(s, 2.0, /*bar=*/true),
            "Recovering [############............]  50%  476.8 MiB / 953.7 MiB  250.0 MB/s  "
            "ETA 2s  logs left 3/10");
}

TEST(ProgressReporterTest, CheckAndRepairSayWhatTheyDo) {
  ProgressSnapshot s{
      .scanned_bytes = 500000000, .total_bytes = 1000000000, .remaining_logs = 3, .total_logs = 10};
  EXPECT_EQ(FormatProgressLine(s, 2.0, /*bar=*/false, kCheckProgressLabel).substr(0, 10),
            "check:  50");
  EXPECT_EQ(FormatProgressLine(s, 2.0, /*bar=*/true, kRepairProgressLabel).substr(0, 11),
            "Repairing [");
}

TEST(ProgressReporterTest, EstimateNeverShowsDoneBeforeTheLastLog) {
  ProgressSnapshot over{
      .scanned_bytes = 2000, .total_bytes = 1000, .remaining_logs = 1, .total_logs = 2};
  EXPECT_EQ(FormatProgressLine(over, 1.0, false).substr(0, 14), "recovery:  99%");
  ProgressSnapshot done{
      .scanned_bytes = 900, .total_bytes = 1000, .remaining_logs = 0, .total_logs = 2};
  EXPECT_EQ(FormatProgressLine(done, 1.0, false).substr(0, 14), "recovery: 100%");
  // Nothing to scan (clean start): progress counts logs.
  ProgressSnapshot clean{
      .scanned_bytes = 0, .total_bytes = 0, .remaining_logs = 3, .total_logs = 4};
  EXPECT_EQ(FormatProgressLine(clean, 1.0, false),
            "recovery:  25%  0 B / 0 B  0.0 MB/s  ETA --  logs left 3/4");
}

TEST(ProgressReporterTest, QuietAndShortPlainRunsPrintNothing) {
  std::ostringstream out;
  {
    ProgressReporter quiet([] { return ProgressSnapshot{}; }, ProgressMode::kQuiet, out);
    quiet.Start();
    ProgressReporter plain([] { return ProgressSnapshot{}; }, ProgressMode::kPlain, out);
    plain.Start();
  }
  EXPECT_EQ(out.str(), "");
}

TEST(ProgressReporterTest, TtyRedrawsInPlaceAndErasesOnStop) {
  std::ostringstream out;
  ProgressReporter tty(
      [] { return ProgressSnapshot{.scanned_bytes = 1, .total_bytes = 4, .total_logs = 1}; },
      ProgressMode::kTty, out);
  tty.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(450));
  tty.Stop();
  const std::string text = out.str();
  EXPECT_EQ(text.substr(0, 12), "\rRecovering ");
  EXPECT_EQ(text.find('\n'), std::string::npos);
  EXPECT_EQ(text.substr(text.size() - 4), "\r\x1b[K");
}

}  // namespace
}  // namespace daruma
