#include "recovery/log_dir_failure_channel.h"

#include "common/file_system.h"

namespace daruma {

bool LogDirFailureChannel::MaybeAddOfflineLogDir(const std::string& log_dir, const Status& error) {
  if (IsTooManyOpenFiles(error)) return false;  // the process's shortage, not the disk's
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!offline_.emplace(log_dir, error).second) return false;
  }
  if (listener_) listener_(log_dir, error);
  return true;
}

bool LogDirFailureChannel::IsOffline(const std::string& log_dir) const {
  std::lock_guard<std::mutex> lock(mu_);
  return offline_.count(log_dir) > 0;
}

Status LogDirFailureChannel::ErrorFor(const std::string& log_dir) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = offline_.find(log_dir);
  return it == offline_.end() ? Status::Ok() : it->second;
}

std::map<std::string, Status> LogDirFailureChannel::OfflineDirs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return offline_;
}

}  // namespace daruma
