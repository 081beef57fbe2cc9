#include "broker/crash_loop_guard.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <string_view>

#include "common/bytes.h"
#include "recovery/dir_lock.h"

namespace daruma::broker {
namespace {

constexpr std::string_view kKey = "unclean.starts=";

std::string FileText(int count) {
  return fmt::format(
      "# Daruma crash-loop guard: starts without a clean shutdown since the last one.\n{}{}\n",
      kKey, count);
}

// The count in the file at `path`.
Result<int> ParseCount(const std::string& path, std::string_view text) {
  size_t line_start = 0;
  while (line_start < text.size()) {
    size_t line_end = text.find('\n', line_start);
    if (line_end == std::string_view::npos) line_end = text.size();
    const std::string_view line = text.substr(line_start, line_end - line_start);
    if (line.starts_with(kKey)) {
      const std::string_view digits = line.substr(kKey.size());
      int count = 0;
      const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
      if (ec == std::errc() && end == digits.data() + digits.size() && count >= 0) return count;
      return Status::Corruption(
          fmt::format("{}: byte {}: expected a non-negative integer after '{}', found '{}'; "
                      "delete the file to reset the crash-loop guard",
                      path, line_start + kKey.size(), kKey, digits));
    }
    line_start = line_end + 1;
  }
  return Status::Corruption(fmt::format(
      "{}: expected a line '{}<n>', found none; delete the file to reset the crash-loop guard",
      path, kKey));
}

}  // namespace

CrashLoopGuard::CrashLoopGuard(FileSystem* fs, std::vector<std::string> log_dirs,
                               int max_unclean_starts)
    : fs_(fs), log_dirs_(std::move(log_dirs)), max_unclean_starts_(max_unclean_starts) {}

std::string CrashLoopGuard::PathIn(const std::string& log_dir) const {
  return JoinPath(log_dir, kCrashLoopFileName);
}

std::string CrashLoopGuard::path() const {
  if (!written_dir_.empty()) return PathIn(written_dir_);
  for (const std::string& dir : log_dirs_) {
    if (fs_->Exists(PathIn(dir))) return PathIn(dir);
  }
  return log_dirs_.empty() ? std::string(kCrashLoopFileName) : PathIn(log_dirs_.front());
}

Result<int> CrashLoopGuard::UncleanStarts() const {
  int highest = 0;
  for (const std::string& dir : log_dirs_) {
    const std::string path = PathIn(dir);
    if (!fs_->Exists(path)) continue;
    Result<std::vector<uint8_t>> bytes = fs_->ReadFile(path);
    if (!bytes.ok()) {
      if (bytes.status().IsIoError()) continue;  // a failed dir
      return bytes.status();
    }
    const std::string_view text(reinterpret_cast<const char*>(bytes->data()), bytes->size());
    DARUMA_ASSIGN_OR_RETURN(int count, ParseCount(path, text));
    highest = std::max(highest, count);
  }
  return highest;
}

Status CrashLoopGuard::RecordStart() {
  DARUMA_ASSIGN_OR_RETURN(int count, UncleanStarts());
  if (max_unclean_starts_ > 0 && count >= max_unclean_starts_) {
    const std::string where = path();
    return Status::OutOfRange(fmt::format(
        "refusing to start: the last {} starts did not end in a clean shutdown "
        "(daruma.crash.loop.max.unclean.starts={}), counted in {}. Find out why the broker "
        "keeps crashing (its log, `daruma recover --report`), then clear the guard with "
        "`daruma serve --clear-crash-loop --config <your server.properties>` or by deleting {}",
        count, max_unclean_starts_, where, where));
  }
  std::string errors;
  for (const std::string& dir : log_dirs_) {
    Status written = fs_->CreateDir(dir);
    if (written.ok()) written = fs_->WriteFileAtomically(PathIn(dir), AsBytes(FileText(count + 1)));
    if (written.ok()) {
      written_dir_ = dir;
      break;
    }
    errors += fmt::format("{}{}", errors.empty() ? "" : "; ", written.ToString());
  }
  if (written_dir_.empty()) {
    return Status::IoError("no log dir can hold the crash-loop guard: " + errors);
  }
  // Another copy would be read, with its stale count, at the next start.
  for (const std::string& dir : log_dirs_) {
    if (dir != written_dir_ && fs_->Exists(PathIn(dir))) (void)fs_->Remove(PathIn(dir));
  }
  return Status::Ok();
}

Status CrashLoopGuard::RecordCleanShutdown() {
  Status first = Status::Ok();
  for (const std::string& dir : log_dirs_) {
    const std::string path = PathIn(dir);
    if (!fs_->Exists(path)) continue;
    Status removed = fs_->Remove(path);
    if (removed.ok()) removed = fs_->SyncDir(dir);
    // A copy RecordStart could not remove stays stale: only the count this
    // start wrote must go for the shutdown to count as clean.
    if (dir == written_dir_ && first.ok()) first = removed;
  }
  return first;
}

Status CrashLoopGuard::Clear() {
  for (const std::string& dir : log_dirs_) {
    const std::string path = PathIn(dir);
    if (!fs_->Exists(path)) continue;
    DARUMA_RETURN_IF_ERROR(fs_->Remove(path));
    DARUMA_RETURN_IF_ERROR(fs_->SyncDir(dir));
  }
  return Status::Ok();
}

Status RefuseIfLogDirsHeld(const std::vector<std::string>& log_dirs) {
  for (const std::string& dir : log_dirs) {
    auto probe = DirLock::Acquire(dir);
    if (!probe.ok() && DirLock::IsHeldElsewhere(probe.status())) return probe.status();
  }
  return Status::Ok();
}

}  // namespace daruma::broker
