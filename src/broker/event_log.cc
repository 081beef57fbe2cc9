#include "broker/event_log.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace daruma::broker {
namespace {

constexpr std::chrono::seconds kWindow{1};

// A bare value is one token a grep or a `key=value` split reads back as is.
bool IsBare(std::string_view v) {
  if (v.empty()) return false;
  return std::all_of(v.begin(), v.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
           c == ':' || c == '/' || c == '+' || c == '@';
  });
}

void AppendValue(std::string& out, std::string_view v) {
  if (IsBare(v)) {
    out += v;
    return;
  }
  out += '"';
  for (char c : v) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        // Other control bytes would garble a terminal: shown as \xNN.
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  out += '"';
}

}  // namespace

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "DEBUG";
    case LogLevel::kInfo:
      return "INFO";
    case LogLevel::kWarn:
      return "WARN";
    case LogLevel::kError:
      return "ERROR";
  }
  return "INFO";
}

Result<LogLevel> ParseLogLevel(std::string_view text) {
  std::string upper(text);
  for (char& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
  if (upper == "DEBUG") return LogLevel::kDebug;
  if (upper == "INFO") return LogLevel::kInfo;
  if (upper == "WARN" || upper == "WARNING") return LogLevel::kWarn;
  if (upper == "ERROR") return LogLevel::kError;
  return Status::InvalidArgument(
      fmt::format("invalid log level \"{}\": expected DEBUG, INFO, WARN or ERROR", text));
}

LogFields& LogFields::Add(std::string_view key, std::string_view value) {
  if (!text_.empty()) text_ += ' ';
  text_ += key;
  text_ += '=';
  AppendValue(text_, value);
  return *this;
}

LogFields& LogFields::Add(std::string_view key, int64_t value) {
  return Add(key, std::string_view(std::to_string(value)));
}

EventLog::EventLog(Options options) : options_(std::move(options)) {}

void EventLog::Write(LogLevel level, std::string_view event, const LogFields& fields) const {
  if (!Enabled(level)) return;
  std::lock_guard lock(mu_);
  SummariseLocked(options_.now ? options_.now() : std::chrono::steady_clock::now(), false);
  LineLocked(level, event, fields.text());
}

void EventLog::WriteLimited(LogLevel level, std::string_view limit_key, std::string_view event,
                            const LogFields& fields) const {
  if (!Enabled(level)) return;
  const auto now = options_.now ? options_.now() : std::chrono::steady_clock::now();
  std::lock_guard lock(mu_);
  SummariseLocked(now, false);
  auto it = windows_.find(limit_key);
  if (it == windows_.end()) it = windows_.emplace(std::string(limit_key), Window{now}).first;
  Window& w = it->second;
  if (now - w.start >= kWindow) w = Window{now};
  w.level = level;
  if (w.written >= options_.max_lines_per_second) {
    ++w.suppressed;
    return;
  }
  ++w.written;
  LineLocked(level, event, fields.text());
}

void EventLog::WriteText(std::string_view text) const {
  if (options_.out == nullptr) return;
  std::lock_guard lock(mu_);
  *options_.out << options_.prefix << text << std::endl;
}

void EventLog::Flush() const {
  if (options_.out == nullptr) return;
  std::lock_guard lock(mu_);
  SummariseLocked(options_.now ? options_.now() : std::chrono::steady_clock::now(), true);
}

void EventLog::SummariseLocked(std::chrono::steady_clock::time_point now, bool all) const {
  for (auto& [key, w] : windows_) {
    if (w.suppressed == 0 || (!all && now - w.start < kWindow)) continue;
    LogFields f;
    f.Add("limit_key", key).Add("suppressed", w.suppressed);
    LineLocked(w.level, "log_suppressed", f.text());
    w.suppressed = 0;
  }
}

void EventLog::LineLocked(LogLevel level, std::string_view event, std::string_view fields) const {
  *options_.out << options_.prefix << "level=" << LogLevelName(level) << " event=" << event;
  if (!fields.empty()) *options_.out << ' ' << fields;
  *options_.out << std::endl;
}

}  // namespace daruma::broker
