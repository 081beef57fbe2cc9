// The text checkpoint format shared by the offset checkpoints and the
// leader-epoch checkpoint (spec §9.3):
//
//   <version>\n
//   <count>\n
//   <entry 1>\n ... <entry count>\n
//
// Reading follows Kafka's reader exactly:
//  * lines end at "\n", "\r" or "\r\n"; a last line without terminator counts;
//  * no first line, or a version line but no count line, reads as empty;
//  * the version line must be an int equal to the expected version;
//  * entry lines are split on runs of whitespace (a leading run yields an
//    empty first field, as Java's String.split does); a wrong field count or
//    an unparsable number is a malformed line;
//  * the number of entry lines must equal <count>.
// Every error is kCorruption naming the file and the 1-based line number.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace daruma {

// Parses a Java int/long: an optional '+' or '-', then one or more ASCII
// digits, in range. std::nullopt otherwise.
std::optional<int32_t> ParseJavaInt(std::string_view text);
std::optional<int64_t> ParseJavaLong(std::string_view text);

// Java's regex \\s: space, \\t, \\n, \\x0B, \\f, \\r.
inline bool IsJavaWhitespace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

// Java's String.split("\\s+") (trailing empty fields removed).
std::vector<std::string_view> SplitOnWhitespace(std::string_view line);

// Parses `content` (the bytes of the file at `path`). `parse_entry` receives the
// fields of one entry line and returns false when the line is malformed.
Status ParseTextCheckpoint(
    std::string_view content, int32_t expected_version, const std::string& path,
    const std::function<bool(const std::vector<std::string_view>&)>& parse_entry);

// Renders the version, the count and one line per entry, each ending in "\n".
std::string SerializeTextCheckpoint(int32_t version, const std::vector<std::string>& entry_lines);

}  // namespace daruma
