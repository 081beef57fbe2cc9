// EventLog (event_log.h): the line format, levels, and the per-key rate limit
// with its "suppressed" summary, on a clock the test steps.
#include "broker/event_log.h"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace daruma::broker {
namespace {

std::vector<std::string> Lines(const std::ostringstream& out) {
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

struct SteppedClock {
  std::chrono::steady_clock::time_point now{};
  EventLog::Now fn() {
    return [this] { return now; };
  }
};

TEST(EventLogTest, ALineIsLevelEventThenFieldsInOrder) {
  std::ostringstream out;
  EventLog log({&out});
  log.Write(LogLevel::kInfo, "error_response",
            LogFields().Add("client_id", "rdkafka").Add("api", "Produce").Add("errors", 2));
  EXPECT_EQ(out.str(),
            "daruma serve: level=INFO event=error_response client_id=rdkafka api=Produce "
            "errors=2\n");
}

TEST(EventLogTest, ValuesThatAreNotPlainTokensAreQuotedAndEscaped) {
  LogFields f;
  f.Add("a", "").Add("b", "two words").Add("c", "q\"b\\n\nx").Add("d", "bell\x07");
  EXPECT_EQ(f.text(), "a=\"\" b=\"two words\" c=\"q\\\"b\\\\n\\nx\" d=\"bell\\x07\"");
  EXPECT_EQ(LogFields().Add("peer", "127.0.0.1:5000").Add("n", -3).text(),
            "peer=127.0.0.1:5000 n=-3");
}

TEST(EventLogTest, LinesBelowTheLevelAreDropped) {
  std::ostringstream out;
  EventLog log({&out, LogLevel::kInfo});
  EXPECT_FALSE(log.Enabled(LogLevel::kDebug));
  log.Write(LogLevel::kDebug, "connection_opened");
  log.Write(LogLevel::kWarn, "request_size_refused");
  EXPECT_EQ(Lines(out),
            std::vector<std::string>{"daruma serve: level=WARN event=request_size_refused"});
  EventLog silent({nullptr});
  EXPECT_FALSE(silent.Enabled(LogLevel::kError));
}

TEST(EventLogTest, ParsesLevelNames) {
  EXPECT_EQ(*ParseLogLevel("debug"), LogLevel::kDebug);
  EXPECT_EQ(*ParseLogLevel("INFO"), LogLevel::kInfo);
  EXPECT_EQ(*ParseLogLevel("Warning"), LogLevel::kWarn);
  EXPECT_EQ(*ParseLogLevel("ERROR"), LogLevel::kError);
  EXPECT_FALSE(ParseLogLevel("verbose").ok());
}

TEST(EventLogTest, RepeatsBeyondTheLimitAreSummedUpWhenTheSecondIsOver) {
  std::ostringstream out;
  SteppedClock clock;
  EventLog log({&out, LogLevel::kInfo, 3, "", clock.fn()});
  for (int i = 0; i < 10; ++i) {
    log.WriteLimited(LogLevel::kInfo, "k", "error_response", LogFields().Add("i", i));
  }
  EXPECT_EQ(Lines(out).size(), 3u);
  clock.now += std::chrono::milliseconds(999);
  log.Write(LogLevel::kInfo, "other");
  EXPECT_EQ(Lines(out).size(), 4u) << "the window is not over yet";
  clock.now += std::chrono::milliseconds(1);
  log.WriteLimited(LogLevel::kInfo, "k", "error_response", LogFields().Add("i", 10));
  const std::vector<std::string> lines = Lines(out);
  ASSERT_EQ(lines.size(), 6u);
  EXPECT_EQ(lines[4], "level=INFO event=log_suppressed limit_key=k suppressed=7");
  EXPECT_EQ(lines[5], "level=INFO event=error_response i=10");
}

TEST(EventLogTest, KeysAreLimitedSeparatelyAndFlushSumsUpAtOnce) {
  std::ostringstream out;
  SteppedClock clock;
  EventLog log({&out, LogLevel::kInfo, 1, "", clock.fn()});
  for (int i = 0; i < 3; ++i) {
    log.WriteLimited(LogLevel::kInfo, "a", "x");
    log.WriteLimited(LogLevel::kInfo, "b", "y");
  }
  EXPECT_EQ(Lines(out), (std::vector<std::string>{"level=INFO event=x", "level=INFO event=y"}));
  log.Flush();
  const std::vector<std::string> lines = Lines(out);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[2], "level=INFO event=log_suppressed limit_key=a suppressed=2");
  EXPECT_EQ(lines[3], "level=INFO event=log_suppressed limit_key=b suppressed=2");
  log.Flush();
  EXPECT_EQ(Lines(out).size(), 4u) << "each summary once";
}

}  // namespace
}  // namespace daruma::broker
