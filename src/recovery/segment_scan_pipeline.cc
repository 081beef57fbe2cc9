#include "recovery/segment_scan_pipeline.h"

#include <algorithm>
#include <utility>

namespace daruma {

SegmentScanPipeline::SegmentScanPipeline(int threads)
    : window_(size_t(threads > 1 ? threads + 1 : 0)) {}

SegmentScanPipeline::SegmentScanPipeline(std::vector<Scan> scans, int threads, ScanHelpPool* help)
    : SegmentScanPipeline(threads) {
  for (Scan& scan : scans) {
    jobs_.push_back({parts_.size(), 1, nullptr});
    parts_.push_back([scan = std::move(scan)] { return SegmentScanPart{scan(), {}}; });
  }
  Start(threads, help);
}

SegmentScanPipeline::SegmentScanPipeline(const std::vector<const LogSegment*>& segments,
                                         int threads, ScanHelpPool* help)
    : SegmentScanPipeline(threads) {
  // Only the last segment large enough is split: the scans before it keep
  // the threads busy anyway, and a second part's marks cost 16 bytes per
  // batch (43 instead of 20 MiB peak for 1 GiB of 100-byte batches when
  // every 128 MiB segment was split, and no faster).
  std::optional<size_t> split;
  if (threads > 1 || help != nullptr) {
    for (size_t i = segments.size(); i-- > 0;) {
      if (segments[i]->size() >= SplitSegmentScan::min_split_bytes()) {
        split = i;
        break;
      }
    }
  }
  for (size_t i = 0; i < segments.size(); ++i) {
    const LogSegment* s = segments[i];
    std::optional<int64_t> next;
    if (i + 1 < segments.size()) next = segments[i + 1]->base_offset();
    if (split == i) {
      Job job{parts_.size(), 2, s->SplitScanForRecovery(next)};
      SplitSegmentScan* split = job.split.get();
      parts_.push_back([split] { return split->ScanFirst(); });
      parts_.push_back([split] { return split->ScanSecond(); });
      jobs_.push_back(std::move(job));
      continue;
    }
    jobs_.push_back({parts_.size(), 1, nullptr});
    parts_.push_back([s, next] { return SegmentScanPart{s->ScanForRecovery(next), {}}; });
  }
  Start(threads, help);
}

void SegmentScanPipeline::Start(int threads, ScanHelpPool* help) {
  done_.resize(parts_.size());
  for (size_t i = 0; i < jobs_.size(); ++i)
    job_of_part_.insert(job_of_part_.end(), jobs_[i].count, i);
  if (parts_.size() <= 1) return;
  if (threads <= 1 && help != nullptr) {
    // The segment being taken and the next: a helper scans the second part
    // of the first or the second while the caller scans or folds, and no
    // more than two segments' scans wait in memory.
    window_ = 2;
    help_ = help;
    help_->Register(this);
    return;
  }
  if (threads <= 1) return;
  // The caller's thread scans too while it waits in Take, so `threads` in
  // all: a thread more would only compete with the fold for the cores.
  const size_t n = std::min(size_t(threads - 1), parts_.size());
  for (size_t t = 0; t < n; ++t) threads_.emplace_back([this] { Work(); });
}

SegmentScanPipeline::~SegmentScanPipeline() {
  Stop();
}

bool SegmentScanPipeline::CanClaimLocked() const {
  return next_to_scan_ < parts_.size() && job_of_part_[next_to_scan_] < taken_ + window_;
}

bool SegmentScanPipeline::JobDoneLocked(const Job& job) const {
  for (size_t k = job.first; k < job.first + job.count; ++k) {
    if (!done_[k].has_value()) return false;
  }
  return true;
}

void SegmentScanPipeline::ScanNextLocked(std::unique_lock<std::mutex>& l) {
  const size_t k = next_to_scan_++;
  l.unlock();
  SegmentScanPart part = parts_[k]();
  l.lock();
  done_[k] = std::move(part);
  cv_.notify_all();
}

void SegmentScanPipeline::Work() {
  std::unique_lock<std::mutex> l(mu_);
  for (;;) {
    cv_.wait(l, [this] { return stopping_ || next_to_scan_ >= parts_.size() || CanClaimLocked(); });
    if (stopping_ || next_to_scan_ >= parts_.size()) return;
    ScanNextLocked(l);
  }
}

SegmentRecoveryScan SegmentScanPipeline::Take(size_t i) {
  Job& job = jobs_[i];
  std::vector<SegmentScanPart> parts;
  parts.reserve(job.count);
  if (threads_.empty() && help_ == nullptr) {
    for (size_t k = job.first; k < job.first + job.count; ++k) parts.push_back(parts_[k]());
    taken_ = i + 1;
  } else {
    std::unique_lock<std::mutex> l(mu_);
    while (!JobDoneLocked(job)) {
      // Scan the next unclaimed part (possibly one of job's) instead of
      // idling while the helpers scan.
      if (CanClaimLocked()) {
        ScanNextLocked(l);
      } else {
        cv_.wait(l);
      }
    }
    for (size_t k = job.first; k < job.first + job.count; ++k) {
      parts.push_back(std::move(*done_[k]));
      done_[k].reset();
    }
    taken_ = i + 1;
    cv_.notify_all();
  }
  // The window moved: the helpers may claim the next segment's parts.
  if (help_ != nullptr) help_->Notify();
  if (job.split) return job.split->Join(std::move(parts[0]), std::move(parts[1]));
  return std::move(parts[0].scan);
}

void SegmentScanPipeline::Stop() {
  // First: once unregistered no helper claims a part here any more.
  if (help_ != nullptr) help_->Unregister(this);
  {
    std::unique_lock<std::mutex> l(mu_);
    stopping_ = true;
    cv_.notify_all();
    cv_.wait(l, [this] { return helping_ == 0; });
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
}

std::optional<size_t> SegmentScanPipeline::ClaimForHelper() {
  std::lock_guard<std::mutex> l(mu_);
  if (stopping_ || !CanClaimLocked()) return std::nullopt;
  ++helping_;
  return next_to_scan_++;
}

void SegmentScanPipeline::RunForHelper(size_t k) {
  SegmentScanPart part = parts_[k]();
  std::lock_guard<std::mutex> l(mu_);
  done_[k] = std::move(part);
  --helping_;
  cv_.notify_all();
}

}  // namespace daruma
