#include "broker/crash_loop_guard.h"

#include <fmt/format.h>

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

}  // namespace

CrashLoopGuard::CrashLoopGuard(FileSystem* fs, std::string log_dir, int max_unclean_starts)
    : fs_(fs),
      log_dir_(std::move(log_dir)),
      path_(JoinPath(log_dir_, kCrashLoopFileName)),
      max_unclean_starts_(max_unclean_starts) {}

Result<int> CrashLoopGuard::UncleanStarts() const {
  if (!fs_->Exists(path_)) return 0;
  DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, fs_->ReadFile(path_));
  const std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
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
                      path_, line_start + kKey.size(), kKey, digits));
    }
    line_start = line_end + 1;
  }
  return Status::Corruption(fmt::format(
      "{}: expected a line '{}<n>', found none; delete the file to reset the crash-loop guard",
      path_, kKey));
}

Status CrashLoopGuard::RecordStart() {
  DARUMA_RETURN_IF_ERROR(fs_->CreateDir(log_dir_));
  DARUMA_ASSIGN_OR_RETURN(int count, UncleanStarts());
  if (max_unclean_starts_ > 0 && count >= max_unclean_starts_) {
    return Status::OutOfRange(fmt::format(
        "refusing to start: the last {} starts did not end in a clean shutdown "
        "(daruma.crash.loop.max.unclean.starts={}), counted in {}. Find out why the broker "
        "keeps crashing (its log, `daruma recover --report`), then clear the guard with "
        "`daruma serve --clear-crash-loop --config <your server.properties>` or by deleting {}",
        count, max_unclean_starts_, path_, path_));
  }
  return fs_->WriteFileAtomically(path_, AsBytes(FileText(count + 1)));
}

Status CrashLoopGuard::Clear() {
  if (!fs_->Exists(path_)) return Status::Ok();
  DARUMA_RETURN_IF_ERROR(fs_->Remove(path_));
  return fs_->SyncDir(log_dir_);
}

Status RefuseIfLogDirsHeld(const std::vector<std::string>& log_dirs) {
  for (const std::string& dir : log_dirs) {
    auto probe = DirLock::Acquire(dir);
    if (!probe.ok() && DirLock::IsHeldElsewhere(probe.status())) return probe.status();
  }
  return Status::Ok();
}

}  // namespace daruma::broker
