#include "recovery/read_ahead_file_system.h"

#include <algorithm>

namespace daruma {

// Passes every call through; reports how far each ReadAt got.
class ReadAheadFileSystem::TrackingFile final : public ForwardingFile {
 public:
  TrackingFile(std::unique_ptr<File> base, ReadAheadFileSystem* owner, size_t segment)
      : ForwardingFile(std::move(base)), owner_(owner), segment_(segment) {}

  Result<size_t> ReadAt(uint64_t pos, std::span<uint8_t> out) const override {
    Result<size_t> n = base()->ReadAt(pos, out);
    if (n.ok()) owner_->OnRead(segment_, pos + *n);
    return n;
  }

 private:
  ReadAheadFileSystem* owner_;
  size_t segment_;
};

ReadAheadFileSystem::ReadAheadFileSystem(FileSystem* base, std::vector<std::string> segments,
                                         uint64_t window)
    : ForwardingFileSystem(base), window_(window) {
  for (std::string& path : segments) {
    auto size = base->FileSize(path);
    if (!size.ok()) continue;  // the reader reports it
    segments_.push_back({std::move(path), total_, *size, nullptr});
    total_ += *size;
  }
  if (total_ > 0 && window > 0) thread_ = std::thread([this] { Run(); });
}

ReadAheadFileSystem::~ReadAheadFileSystem() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Result<std::unique_ptr<File>> ReadAheadFileSystem::Open(const std::string& path, OpenMode mode) {
  DARUMA_ASSIGN_OR_RETURN(std::unique_ptr<File> file, base()->Open(path, mode));
  if (mode != OpenMode::kRead) return file;
  for (size_t i = 0; i < segments_.size(); ++i) {
    if (segments_[i].path == path) {
      return std::unique_ptr<File>(std::make_unique<TrackingFile>(std::move(file), this, i));
    }
  }
  return file;
}

void ReadAheadFileSystem::WaitUntilRead(const std::string& path) {
  for (const Segment& s : segments_) {
    if (s.path != path) continue;
    std::unique_lock<std::mutex> lock(mu_);
    read_cv_.wait(lock, [&] { return finished_ || consumed_ >= s.start + s.size; });
    return;
  }
}

void ReadAheadFileSystem::Finish() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    finished_ = true;
  }
  read_cv_.notify_all();
}

uint64_t ReadAheadFileSystem::advised_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return advice_done_;
}

void ReadAheadFileSystem::OnRead(size_t segment, uint64_t end_in_segment) {
  const Segment& s = segments_[segment];
  const uint64_t at = s.start + std::min(end_in_segment, s.size);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (at <= consumed_) return;
    consumed_ = at;
  }
  cv_.notify_one();
  read_cv_.notify_all();
}

// Issues WillNeed chunk by chunk, never beyond consumed_ + window_.
void ReadAheadFileSystem::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] {
      return stopping_ || advised_ >= total_ || advised_ < std::min(total_, consumed_ + window_);
    });
    if (stopping_ || advised_ >= total_) return;
    const uint64_t from = std::max(advised_, consumed_);
    const uint64_t to = std::min({total_, consumed_ + window_, from + kChunk});
    advised_ = to;
    lock.unlock();
    Advise(from, to);
    lock.lock();
    advice_done_ = to;  // one thread advises, in order: [0, to) is done
  }
}

// [from, to) in the segments laid end to end; unlocked (only this thread
// touches Segment::file).
void ReadAheadFileSystem::Advise(uint64_t from, uint64_t to) {
  for (Segment& s : segments_) {
    const uint64_t lo = std::max(from, s.start);
    const uint64_t hi = std::min(to, s.start + s.size);
    if (lo >= hi) continue;
    if (s.file == nullptr) {
      auto file = base()->Open(s.path, OpenMode::kRead);
      if (!file.ok()) continue;  // the reader reports it
      s.file = std::move(*file);
    }
    s.file->WillNeed(lo - s.start, hi - lo);
  }
}

}  // namespace daruma
