#include "recovery/scan_help_pool.h"

#include <algorithm>
#include <optional>

#include "recovery/segment_scan_pipeline.h"

namespace daruma {

std::atomic<int64_t> ScanHelpPool::parts_helped_{0};

void ScanHelpPool::Register(SegmentScanPipeline* pipeline) {
  {
    std::lock_guard<std::mutex> l(mu_);
    pipelines_.push_back(pipeline);
  }
  cv_.notify_all();
}

void ScanHelpPool::Unregister(SegmentScanPipeline* pipeline) {
  std::lock_guard<std::mutex> l(mu_);
  pipelines_.erase(std::remove(pipelines_.begin(), pipelines_.end(), pipeline), pipelines_.end());
}

// Under mu_, so that a helper between its look at the pipelines and its wait
// cannot miss the wake-up.
void ScanHelpPool::Notify() {
  std::lock_guard<std::mutex> l(mu_);
  cv_.notify_all();
}

void ScanHelpPool::Close() {
  {
    std::lock_guard<std::mutex> l(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

void ScanHelpPool::Serve() {
  std::unique_lock<std::mutex> l(mu_);
  while (!closed_) {
    SegmentScanPipeline* claimed = nullptr;
    std::optional<size_t> part;
    for (SegmentScanPipeline* p : pipelines_) {
      part = p->ClaimForHelper();
      if (part) {
        claimed = p;
        break;
      }
    }
    if (claimed == nullptr) {
      cv_.wait(l);
      continue;
    }
    // The claim keeps `claimed` alive: its Stop() waits for the part.
    l.unlock();
    claimed->RunForHelper(*part);
    parts_helped_.fetch_add(1);
    l.lock();
  }
}

}  // namespace daruma
