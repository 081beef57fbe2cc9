#include "recovery/background_syncs.h"

#include <utility>

namespace daruma {

BackgroundSyncs::~BackgroundSyncs() {
  // Only reached with jobs left when the load already failed: its error wins.
  Status ignored = Wait();
  (void)ignored;
}

void BackgroundSyncs::WaitForOldest() {
  Status st = in_flight_.front().get();
  in_flight_.pop_front();
  if (first_error_.ok() && !st.ok()) first_error_ = std::move(st);
}

Status BackgroundSyncs::Run(std::function<Status()> job) {
  if (max_in_flight_ == 0) return job();
  while (in_flight_.size() >= max_in_flight_) WaitForOldest();
  in_flight_.push_back(std::async(std::launch::async, std::move(job)));
  return first_error_;
}

Status BackgroundSyncs::Wait() {
  while (!in_flight_.empty()) WaitForOldest();
  return first_error_;
}

}  // namespace daruma
