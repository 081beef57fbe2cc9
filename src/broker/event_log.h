// EventLog: the broker's operational log lines — one line per event, in a
// format that stays stable so operators can grep and parse it:
//
//   daruma serve: level=INFO event=error_response client_id=rdkafka api=Produce ...
//
// After the prefix come `level=` and `event=`, then the event's fields in the
// order the caller added them. A value is written bare when it is a plain
// token, else in double quotes with \" \\ \n \r \t escaped (LogFields), so a
// client id sent by a client can never break a line or forge a field.
//
// Rate limiting: WriteLimited() lets at most `max_lines_per_second` lines per
// limit key through per one-second window (the key names what repeats, e.g.
// "error_response/Produce/NOT_LEADER_OR_FOLLOWER"). What a window dropped is
// summed up in one line once the window is over, written before the next
// line of any kind (or by Flush() at shutdown):
//
//   daruma serve: level=INFO event=log_suppressed limit_key=... suppressed=42
//
// Levels: DEBUG < INFO < WARN < ERROR; lines below `level` are dropped
// without being formatted (check Enabled() before building fields).
//
// Thread safety: every method may be called from any thread; lines never
// interleave (one mutex around the stream).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <ostream>
#include <string>
#include <string_view>

#include "common/status.h"

namespace daruma::broker {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };

std::string_view LogLevelName(LogLevel level);  // "DEBUG", "INFO", ...
// Case-insensitive DEBUG, INFO, WARN (or WARNING), ERROR.
Result<LogLevel> ParseLogLevel(std::string_view text);

// The fields of one line, built in order: Add("api", "Produce").Add("n", 3).
class LogFields {
 public:
  LogFields& Add(std::string_view key, std::string_view value);
  LogFields& Add(std::string_view key, int64_t value);
  const std::string& text() const { return text_; }

 private:
  std::string text_;
};

class EventLog {
 public:
  using Now = std::function<std::chrono::steady_clock::time_point()>;
  struct Options {
    std::ostream* out = nullptr;  // null: nothing is written
    LogLevel level = LogLevel::kInfo;
    int max_lines_per_second = 10;  // per limit key
    std::string prefix = "daruma serve: ";
    Now now;  // default: steady_clock::now (tests step their own)
  };

  explicit EventLog(Options options);
  EventLog(const EventLog&) = delete;
  EventLog& operator=(const EventLog&) = delete;

  bool Enabled(LogLevel level) const { return options_.out != nullptr && level >= options_.level; }
  void Write(LogLevel level, std::string_view event, const LogFields& fields = {}) const;
  void WriteLimited(LogLevel level, std::string_view limit_key, std::string_view event,
                    const LogFields& fields = {}) const;
  // A free-text line after the prefix (the broker's life-cycle lines).
  void WriteText(std::string_view text) const;
  // Writes the summaries of windows that dropped lines, over or not.
  void Flush() const;

 private:
  struct Window {
    std::chrono::steady_clock::time_point start;
    int written = 0;
    int64_t suppressed = 0;
    LogLevel level = LogLevel::kInfo;
  };
  // With mu_ held: summaries of windows over for a second (all with `all`).
  void SummariseLocked(std::chrono::steady_clock::time_point now, bool all) const;
  void LineLocked(LogLevel level, std::string_view event, std::string_view fields) const;

  const Options options_;
  // Writing a line is not a change of state a caller sees: const methods.
  mutable std::mutex mu_;
  mutable std::map<std::string, Window, std::less<>> windows_;
};

}  // namespace daruma::broker
