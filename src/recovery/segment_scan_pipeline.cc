#include "recovery/segment_scan_pipeline.h"

#include <utility>

namespace daruma {

SegmentScanPipeline::SegmentScanPipeline(std::vector<const LogSegment*> segments, int threads)
    : segments_(std::move(segments)),
      window_(size_t(threads > 1 ? threads + 1 : 0)),
      done_(segments_.size()) {
  if (threads <= 1 || segments_.size() <= 1) return;
  const size_t n = std::min(size_t(threads), segments_.size());
  for (size_t t = 0; t < n; ++t) threads_.emplace_back([this] { Work(); });
}

SegmentScanPipeline::~SegmentScanPipeline() {
  Stop();
}

void SegmentScanPipeline::Work() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [this] {
      return stopping_ || next_to_scan_ >= segments_.size() || next_to_scan_ < taken_ + window_;
    });
    if (stopping_ || next_to_scan_ >= segments_.size()) return;
    const size_t i = next_to_scan_++;
    l.unlock();
    SegmentRecoveryScan scan = segments_[i]->ScanForRecovery();
    l.lock();
    done_[i] = std::move(scan);
    cv_.notify_all();
  }
}

SegmentRecoveryScan SegmentScanPipeline::Take(size_t i) {
  if (threads_.empty()) {
    taken_ = i + 1;
    return segments_[i]->ScanForRecovery();
  }
  std::unique_lock<std::mutex> l(mu_);
  cv_.wait(l, [&] { return done_[i].has_value(); });
  SegmentRecoveryScan scan = std::move(*done_[i]);
  done_[i].reset();
  taken_ = i + 1;
  cv_.notify_all();
  return scan;
}

void SegmentScanPipeline::Stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace daruma
