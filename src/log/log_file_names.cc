#include "log/log_file_names.h"

#include <charconv>
#include <cstring>

#include "common/file_system.h"

namespace daruma {
namespace {

// Kafka's filenamePrefixFromOffset: the offset in decimal, zero-padded to 20
// digits, after a '-' when negative. Written into `out` (at least 21 bytes);
// returns the length. A load names every file of every segment it opens, so
// a name is built with one allocation, not one per piece.
size_t WritePrefix(int64_t offset, char* out) {
  const bool negative = offset < 0;
  // Magnitude as unsigned so INT64_MIN is rendered correctly.
  uint64_t magnitude = negative ? uint64_t(0) - uint64_t(offset) : uint64_t(offset);
  char digits[20];
  const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, magnitude);
  const size_t n = size_t(end - digits);  // 2^64 has 20 digits: always fits
  size_t at = 0;
  if (negative) out[at++] = '-';
  for (size_t i = n; i < 20; ++i) out[at++] = '0';
  std::memcpy(out + at, digits, n);
  return at + n;
}

std::string SegmentFileName(const std::string& dir, int64_t offset, std::string_view kind,
                            std::string_view suffix) {
  char prefix[21];
  const size_t prefix_len = WritePrefix(offset, prefix);
  const bool slash = !dir.empty() && dir.back() != '/';
  std::string path;
  path.reserve(dir.size() + size_t(slash) + prefix_len + kind.size() + suffix.size());
  path.append(dir);
  if (slash) path.push_back('/');
  path.append(prefix, prefix_len);
  path.append(kind);
  path.append(suffix);
  return path;
}

}  // namespace

std::string FilenamePrefixFromOffset(int64_t offset) {
  char prefix[21];
  return std::string(prefix, WritePrefix(offset, prefix));
}

std::string LogFileName(const std::string& dir, int64_t base_offset, std::string_view suffix) {
  return SegmentFileName(dir, base_offset, kLogFileSuffix, suffix);
}
std::string OffsetIndexFileName(const std::string& dir, int64_t base_offset,
                                std::string_view suffix) {
  return SegmentFileName(dir, base_offset, kIndexFileSuffix, suffix);
}
std::string TimeIndexFileName(const std::string& dir, int64_t base_offset,
                              std::string_view suffix) {
  return SegmentFileName(dir, base_offset, kTimeIndexFileSuffix, suffix);
}
std::string TxnIndexFileName(const std::string& dir, int64_t base_offset, std::string_view suffix) {
  return SegmentFileName(dir, base_offset, kTxnIndexFileSuffix, suffix);
}
std::string ProducerSnapshotFileName(const std::string& dir, int64_t offset,
                                     std::string_view suffix) {
  return SegmentFileName(dir, offset, kProducerSnapshotFileSuffix, suffix);
}

Result<int64_t> OffsetFromFileName(std::string_view name) {
  const size_t slash = name.find_last_of('/');
  if (slash != std::string_view::npos) name.remove_prefix(slash + 1);
  const size_t dot = name.find('.');
  if (dot == std::string_view::npos) {
    return Status::InvalidArgument("file name '" + std::string(name) +
                                   "' has no '.', expected <offset>.<suffix>");
  }
  std::string_view prefix = name.substr(0, dot);
  // Java's Long.parseLong accepts one leading sign.
  std::string_view digits = prefix;
  if (!digits.empty() && digits.front() == '+') digits.remove_prefix(1);
  int64_t value = 0;
  const char* end = digits.data() + digits.size();
  auto [ptr, ec] = std::from_chars(digits.data(), end, value);
  const bool only_sign_digits = !digits.empty() && (digits.front() != '-' || prefix.front() != '+');
  if (ec != std::errc() || ptr != end || !only_sign_digits) {
    return Status::InvalidArgument("file name '" + std::string(name) +
                                   "': expected a decimal offset before the first '.', found '" +
                                   std::string(prefix) + "'");
  }
  return value;
}

bool HasSuffix(std::string_view name, std::string_view suffix) {
  return name.size() >= suffix.size() && name.substr(name.size() - suffix.size()) == suffix;
}

bool IsIndexFileName(std::string_view name) {
  return HasSuffix(name, kIndexFileSuffix) || HasSuffix(name, kTimeIndexFileSuffix) ||
         HasSuffix(name, kTxnIndexFileSuffix);
}

}  // namespace daruma
