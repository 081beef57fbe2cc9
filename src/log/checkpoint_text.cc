#include "log/checkpoint_text.h"

#include <limits>

#include "common/printable_text.h"

namespace daruma {
namespace {

template <typename T>
std::optional<T> ParseJavaInteger(std::string_view text) {
  if (text.empty()) return std::nullopt;
  bool negative = false;
  if (text.front() == '+' || text.front() == '-') {
    negative = text.front() == '-';
    text.remove_prefix(1);
  }
  if (text.empty()) return std::nullopt;
  // Accumulate negatively so the minimum value fits.
  int64_t value = 0;
  const int64_t min = std::numeric_limits<T>::min();
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    const int digit = c - '0';
    if (value < (min + digit) / 10) return std::nullopt;
    value = value * 10 - digit;
  }
  if (!negative) {
    if (value == min) return std::nullopt;
    value = -value;
  }
  return T(value);
}

// Java BufferedReader.readLine over a string.
class LineReader {
 public:
  explicit LineReader(std::string_view text) : text_(text) {}
  std::optional<std::string_view> Next() {
    if (pos_ >= text_.size()) return std::nullopt;
    const size_t end = text_.find_first_of("\r\n", pos_);
    ++line_number_;
    if (end == std::string_view::npos) {
      std::string_view line = text_.substr(pos_);
      pos_ = text_.size();
      return line;
    }
    std::string_view line = text_.substr(pos_, end - pos_);
    pos_ = end + 1;
    if (text_[end] == '\r' && pos_ < text_.size() && text_[pos_] == '\n') ++pos_;
    return line;
  }
  int line_number() const { return line_number_; }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  int line_number_ = 0;
};

Status Malformed(const std::string& path, int line_number, std::string_view line) {
  return Status::Corruption("malformed line " + std::to_string(line_number) +
                            " in checkpoint file " + path + ": '" + PrintableText(line) + "'");
}

}  // namespace

std::optional<int32_t> ParseJavaInt(std::string_view text) {
  return ParseJavaInteger<int32_t>(text);
}

std::optional<int64_t> ParseJavaLong(std::string_view text) {
  return ParseJavaInteger<int64_t>(text);
}

std::vector<std::string_view> SplitOnWhitespace(std::string_view line) {
  std::vector<std::string_view> fields;
  // Like Java: no separator at all yields the line itself, even when empty.
  bool has_separator = false;
  for (char c : line) has_separator |= IsJavaWhitespace(c);
  if (!has_separator) return {line};
  size_t pos = 0;
  while (pos <= line.size()) {
    size_t end = pos;
    while (end < line.size() && !IsJavaWhitespace(line[end])) ++end;
    fields.push_back(line.substr(pos, end - pos));
    if (end == line.size()) break;
    pos = end;
    while (pos < line.size() && IsJavaWhitespace(line[pos])) ++pos;
  }
  while (!fields.empty() && fields.back().empty()) fields.pop_back();
  return fields;
}

Status ParseTextCheckpoint(
    std::string_view content, int32_t expected_version, const std::string& path,
    const std::function<bool(const std::vector<std::string_view>&)>& parse_entry) {
  LineReader reader(content);
  std::optional<std::string_view> line = reader.Next();
  if (!line) return Status::Ok();
  std::optional<int32_t> version = ParseJavaInt(*line);
  if (!version) return Malformed(path, reader.line_number(), *line);
  if (*version != expected_version) {
    return Status::Corruption("unrecognised version " + std::to_string(*version) +
                              " in checkpoint file " + path + " (line 1), expected version " +
                              std::to_string(expected_version));
  }
  line = reader.Next();
  if (!line) return Status::Ok();
  std::optional<int32_t> expected_count = ParseJavaInt(*line);
  if (!expected_count || *expected_count < 0) return Malformed(path, reader.line_number(), *line);
  int32_t count = 0;
  while ((line = reader.Next())) {
    if (!parse_entry(SplitOnWhitespace(*line))) return Malformed(path, reader.line_number(), *line);
    ++count;
  }
  if (count != *expected_count) {
    return Status::Corruption("expected " + std::to_string(*expected_count) +
                              " entries in checkpoint file " + path + " (line 2), but found " +
                              std::to_string(count));
  }
  return Status::Ok();
}

std::string SerializeTextCheckpoint(int32_t version, const std::vector<std::string>& entry_lines) {
  std::string out = std::to_string(version) + "\n" + std::to_string(entry_lines.size()) + "\n";
  for (const std::string& line : entry_lines) out += line + "\n";
  return out;
}

}  // namespace daruma
