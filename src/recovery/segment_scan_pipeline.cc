#include "recovery/segment_scan_pipeline.h"

#include <algorithm>
#include <utility>

namespace daruma {

namespace {

std::vector<SegmentScanPipeline::Scan> ScansOf(const std::vector<const LogSegment*>& segments) {
  std::vector<SegmentScanPipeline::Scan> scans;
  scans.reserve(segments.size());
  for (size_t i = 0; i < segments.size(); ++i) {
    const LogSegment* s = segments[i];
    std::optional<int64_t> next;
    if (i + 1 < segments.size()) next = segments[i + 1]->base_offset();
    scans.push_back([s, next] { return s->ScanForRecovery(next); });
  }
  return scans;
}

}  // namespace

SegmentScanPipeline::SegmentScanPipeline(std::vector<Scan> scans, int threads)
    : scans_(std::move(scans)),
      window_(size_t(threads > 1 ? threads + 1 : 0)),
      done_(scans_.size()) {
  if (threads <= 1 || scans_.size() <= 1) return;
  // The caller's thread scans too while it waits in Take, so `threads` in
  // all: a thread more would only compete with the fold for the cores.
  const size_t n = std::min(size_t(threads - 1), scans_.size());
  for (size_t t = 0; t < n; ++t) threads_.emplace_back([this] { Work(); });
}

SegmentScanPipeline::SegmentScanPipeline(const std::vector<const LogSegment*>& segments,
                                         int threads)
    : SegmentScanPipeline(ScansOf(segments), threads) {}

SegmentScanPipeline::~SegmentScanPipeline() {
  Stop();
}

bool SegmentScanPipeline::CanClaimLocked() const {
  return next_to_scan_ < scans_.size() && next_to_scan_ < taken_ + window_;
}

void SegmentScanPipeline::ScanNextLocked(std::unique_lock<std::mutex>& l) {
  const size_t i = next_to_scan_++;
  l.unlock();
  SegmentRecoveryScan scan = scans_[i]();
  l.lock();
  done_[i] = std::move(scan);
  cv_.notify_all();
}

void SegmentScanPipeline::Work() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [this] { return stopping_ || next_to_scan_ >= scans_.size() || CanClaimLocked(); });
    if (stopping_ || next_to_scan_ >= scans_.size()) return;
    ScanNextLocked(l);
  }
}

SegmentRecoveryScan SegmentScanPipeline::Take(size_t i) {
  if (threads_.empty()) {
    taken_ = i + 1;
    return scans_[i]();
  }
  std::unique_lock<std::mutex> l(mu_);
  while (!done_[i].has_value()) {
    // Scan the next unclaimed segment (possibly i itself) instead of idling
    // while the helpers scan.
    if (CanClaimLocked()) {
      ScanNextLocked(l);
    } else {
      cv_.wait(l);
    }
  }
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
