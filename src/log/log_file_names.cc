#include "log/log_file_names.h"

#include <charconv>

#include "common/file_system.h"

namespace daruma {
namespace {

std::string SegmentFileName(const std::string& dir, int64_t offset, std::string_view kind,
                            std::string_view suffix) {
  std::string name = FilenamePrefixFromOffset(offset);
  name.append(kind);
  name.append(suffix);
  return JoinPath(dir, name);
}

}  // namespace

std::string FilenamePrefixFromOffset(int64_t offset) {
  const bool negative = offset < 0;
  // Magnitude as unsigned so INT64_MIN is rendered correctly.
  uint64_t magnitude = negative ? uint64_t(0) - uint64_t(offset) : uint64_t(offset);
  std::string digits = std::to_string(magnitude);
  if (digits.size() < 20) digits.insert(0, 20 - digits.size(), '0');
  return negative ? "-" + digits : digits;
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
