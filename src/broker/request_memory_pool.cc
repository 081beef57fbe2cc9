#include "broker/request_memory_pool.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace daruma::broker {

bool RequestMemoryPool::Reserve(int64_t bytes, OnGrant on_grant, Ticket* ticket) {
  std::lock_guard lock(mu_);
  // Waiters first: a stream of small requests must not starve a queued one.
  if (waiters_.empty() && HasRoom()) {
    reserved_ += bytes;
    return true;
  }
  *ticket = next_ticket_++;
  waiters_.push_back({*ticket, bytes, std::move(on_grant)});
  return false;
}

bool RequestMemoryPool::Cancel(Ticket ticket) {
  std::lock_guard lock(mu_);
  auto it = std::find_if(waiters_.begin(), waiters_.end(),
                         [ticket](const Waiter& w) { return w.ticket == ticket; });
  if (it == waiters_.end()) return false;
  waiters_.erase(it);
  return true;
}

void RequestMemoryPool::Release(int64_t bytes) {
  std::vector<OnGrant> granted;
  {
    std::lock_guard lock(mu_);
    reserved_ -= bytes;
    while (!waiters_.empty() && HasRoom()) {
      reserved_ += waiters_.front().bytes;
      granted.push_back(std::move(waiters_.front().on_grant));
      waiters_.pop_front();
    }
  }
  for (OnGrant& grant : granted) grant();
}

int64_t RequestMemoryPool::reserved() const {
  std::lock_guard lock(mu_);
  return reserved_;
}

size_t RequestMemoryPool::waiting() const {
  std::lock_guard lock(mu_);
  return waiters_.size();
}

}  // namespace daruma::broker
