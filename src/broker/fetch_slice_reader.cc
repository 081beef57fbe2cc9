#include "broker/fetch_slice_reader.h"

#include <sys/stat.h>

#include <algorithm>
#include <array>

#include "common/bytes.h"
#include "log/log_file_names.h"

namespace daruma::broker {
namespace {

// Every log entry starts with offset (int64) and length (int32); magic is at
// byte 16 and a v2 batch's lastOffsetDelta (int32) at byte 23.
constexpr size_t kLogOverhead = 12;
constexpr size_t kMagicAt = 16;
constexpr size_t kLastOffsetDeltaAt = 23;
constexpr size_t kHeaderBytes = 27;
constexpr int32_t kMinEntryLength = 14;  // a v0 message without key and value
// Headers of batches smaller than this are read a chunk at a time.
constexpr uint64_t kSmallBatch = 8 << 10;
constexpr size_t kChunkBytes = 64 << 10;

// Where one log entry is and which offsets it holds.
struct EntryHeader {
  int64_t base_offset = 0;
  int64_t last_offset = 0;
  uint64_t size = 0;  // with the 12-byte log overhead
};

// One entry of a segment's .index: `position` is where a batch starts, and
// `offset` (base + relative) is at least that batch's last offset (Kafka
// indexes the largest offset of each append at the append's first byte).
struct IndexEntry {
  int64_t offset = 0;
  uint64_t position = 0;
};

// The last entry of `index` for which `usable` holds, given that it holds for
// a prefix of the entries; nullopt if it holds for none. Only entries below
// the high watermark are asked about: they are completely written, while the
// unwritten tail of a preallocated index reads as zeros, so "written" is a
// prefix too and a binary search applies.
template <typename Usable>
std::optional<IndexEntry> LastIndexEntryWhere(const File& index, int64_t base, int64_t hw,
                                              Usable usable) {
  Result<uint64_t> size = index.Size();
  if (!size.ok()) return std::nullopt;
  auto entry = [&](uint64_t i) -> std::optional<IndexEntry> {
    std::array<uint8_t, 8> e{};
    Result<size_t> n = index.ReadAt(i * 8, e);
    if (!n.ok() || *n != e.size()) return std::nullopt;
    const int64_t relative = int32_t(LoadBe32(e.data()));
    const int64_t position = int32_t(LoadBe32(e.data() + 4));
    const bool written = i == 0 || relative > 0;
    if (!written || base + relative >= hw || position < 0) return std::nullopt;
    IndexEntry found{base + relative, uint64_t(position)};
    if (!usable(found)) return std::nullopt;
    return found;
  };
  uint64_t lo = 0;  // entries [0, lo) are usable
  uint64_t hi = *size / 8;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (entry(mid)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo == 0 ? std::nullopt : entry(lo - 1);
}

}  // namespace

// Reads entry headers of one file in order, in chunks while entries are
// small (one pread for many headers) and header by header when they are
// large (no bytes read that a header does not need).
class HeaderScanner {
 public:
  explicit HeaderScanner(const File* file) : file_(file) {}

  // The entry at `position`; nullopt at the end of the file's entries (end of
  // file, or a header that is not a complete, plausible entry).
  std::optional<EntryHeader> At(uint64_t position) {
    std::array<uint8_t, kHeaderBytes> header{};
    const size_t n = Load(position, header);
    if (n < kMagicAt + 1) return std::nullopt;
    const int32_t length = int32_t(LoadBe32(header.data() + 8));
    if (length < kMinEntryLength) return std::nullopt;
    EntryHeader e;
    e.base_offset = int64_t(LoadBe64(header.data()));
    e.last_offset = e.base_offset;  // magic 0/1: the (wrapper's) last offset
    e.size = kLogOverhead + uint64_t(length);
    if (header[kMagicAt] >= 2) {
      if (n < kHeaderBytes) return std::nullopt;
      e.last_offset += int32_t(LoadBe32(header.data() + kLastOffsetDeltaAt));
    }
    last_size_ = e.size;
    return e;
  }

 private:
  // Copies up to kHeaderBytes at `position` into `out`; the count.
  size_t Load(uint64_t position, std::array<uint8_t, kHeaderBytes>& out) {
    if (last_size_ >= kSmallBatch) {
      Result<size_t> n = file_->ReadAt(position, out);
      return n.ok() ? *n : 0;
    }
    if (position < chunk_at_ || position + kHeaderBytes > chunk_at_ + chunk_.size()) {
      chunk_.resize(kChunkBytes);
      Result<size_t> n = file_->ReadAt(position, chunk_);
      chunk_.resize(n.ok() ? *n : 0);
      chunk_at_ = position;
    }
    const size_t available = size_t(chunk_at_ + chunk_.size() - position);
    const size_t n = std::min(available, kHeaderBytes);
    std::copy_n(chunk_.begin() + ptrdiff_t(position - chunk_at_), n, out.begin());
    return n;
  }

  const File* file_;
  uint64_t last_size_ = 0;
  Bytes chunk_;
  uint64_t chunk_at_ = 0;
};

std::optional<std::vector<FileSlice>> FetchSliceReader::Read(Log& log, int64_t fetch_offset,
                                                             int64_t max_bytes, bool min_one,
                                                             FetchIsolation isolation,
                                                             int64_t* upper) {
  if (fs_ == nullptr || isolation == FetchIsolation::kLogEnd) return std::nullopt;
  // Named hw below: every batch returned lies wholly under it.
  const int64_t hw =
      isolation == FetchIsolation::kTxnCommitted ? log.last_stable_offset() : log.high_watermark();
  if (upper != nullptr) *upper = hw;
  if (fetch_offset < log.log_start_offset() || fetch_offset >= hw) return std::nullopt;
  const TopicPartition& tp = log.topic_partition();
  std::optional<Cursor> cursor = FindCursor(log, fetch_offset);
  std::vector<int64_t> bases;
  if (!cursor) {
    bases = log.segment_base_offsets();
    auto it = std::upper_bound(bases.begin(), bases.end(), fetch_offset);
    if (it == bases.begin()) return std::nullopt;
    cursor = Locate(log, *std::prev(it), fetch_offset, hw);
    if (!cursor) return std::nullopt;
  }
  const uint64_t budget = uint64_t(std::max<int64_t>(max_bytes, 0));
  std::vector<FileSlice> out;
  uint64_t total = 0;
  int64_t next = fetch_offset;
  HeaderScanner scanner(cursor->file.get());
  bool skipped_ahead = false;
  while (true) {
    if (!skipped_ahead) {
      skipped_ahead = true;
      SkipIndexedBatches(*cursor, scanner, budget, hw, next, out, total);
    }
    std::optional<EntryHeader> e = scanner.At(cursor->position);
    if (!e) {
      // End of this segment. Like Log::Read, a fetch never spans segments:
      // only a cursor left at a segment's end moves on to the next one.
      if (total > 0) break;
      if (bases.empty()) bases = log.segment_base_offsets();
      auto it = std::upper_bound(bases.begin(), bases.end(), cursor->segment_base);
      if (it == bases.end() || *it >= hw) return std::nullopt;
      cursor = OpenCursor(log, *it);
      if (!cursor) return std::nullopt;
      scanner = HeaderScanner(cursor->file.get());
      skipped_ahead = false;
      continue;
    }
    if (e->last_offset >= hw) break;
    if (e->last_offset < next) return std::nullopt;  // not where the index led: let the log read
    if (total + e->size > budget && !(total == 0 && min_one)) break;
    AppendRange(out, cursor->file, cursor->position, e->size);
    total += e->size;
    next = e->last_offset + 1;
    cursor->position += e->size;
  }
  if (total == 0) return std::nullopt;
  PutCursor(tp, next, std::move(*cursor));
  return out;
}

// Without this, a 10 MiB fetch of 1 KiB batches reads all 10 MiB to find
// ~10,000 headers, which cost the broker as much CPU as the whole send and
// sat on the consumer's round trip. The index hint is never trusted alone:
// the bytes at its position must be the header of a batch that starts at or
// after `next` and not beyond `hw`. Offsets strictly increase within a
// segment, so every batch between the cursor and that header is whole, holds
// offsets in [next, hw) and fits the budget; a stale or foreign index fails
// the check and the headers are simply scanned.
void FetchSliceReader::SkipIndexedBatches(Cursor& cursor, HeaderScanner& scanner, uint64_t budget,
                                          int64_t hw, int64_t& next, std::vector<FileSlice>& out,
                                          uint64_t& total) {
  const uint64_t start = cursor.position;
  std::optional<IndexEntry> entry =
      LastIndexEntryWhere(*cursor.index, cursor.segment_base, hw,
                          [&](const IndexEntry& e) { return e.position <= start + budget; });
  if (!entry || entry->position <= start) return;
  std::optional<EntryHeader> there = scanner.At(entry->position);
  if (!there || there->base_offset < next || there->base_offset > hw) return;
  AppendRange(out, cursor.file, start, entry->position - start);
  total += entry->position - start;
  next = there->base_offset;
  cursor.position = entry->position;
}

void FetchSliceReader::AppendRange(std::vector<FileSlice>& out,
                                   const std::shared_ptr<const File>& file, uint64_t position,
                                   uint64_t length) {
  if (!out.empty() && out.back().file == file &&
      out.back().position + out.back().length == position) {
    out.back().length += length;
  } else {
    out.push_back({file, position, length});
  }
}

std::optional<FetchSliceReader::Cursor> FetchSliceReader::Locate(Log& log, int64_t base,
                                                                 int64_t offset, int64_t hw) {
  std::optional<Cursor> cursor = OpenCursor(log, base);
  if (!cursor) return std::nullopt;
  std::optional<IndexEntry> entry = LastIndexEntryWhere(
      *cursor->index, base, hw, [offset](const IndexEntry& e) { return e.offset <= offset; });
  if (entry) cursor->position = entry->position;
  HeaderScanner scanner(cursor->file.get());
  // Stops at the entry holding `offset`, or at the end of the segment (the
  // offset is then at the start of a later one).
  while (std::optional<EntryHeader> e = scanner.At(cursor->position)) {
    if (e->last_offset >= offset) break;
    cursor->position += e->size;
  }
  return cursor;
}

std::optional<FetchSliceReader::Cursor> FetchSliceReader::OpenCursor(const Log& log, int64_t base) {
  std::shared_ptr<const File> file = OpenShared(LogFileName(log.dir(), base));
  if (file == nullptr || file->fd() < 0) return std::nullopt;
  std::shared_ptr<const File> index = OpenShared(OffsetIndexFileName(log.dir(), base));
  if (index == nullptr) return std::nullopt;
  return Cursor{&log, base, std::move(file), std::move(index), 0};
}

namespace {

// True when `file` is still the file `path` names (same device and inode).
bool StillNamedBy(const File& file, const std::string& path) {
  struct stat open_stat {};
  struct stat path_stat {};
  if (file.fd() < 0 || ::fstat(file.fd(), &open_stat) != 0) return false;
  if (::stat(path.c_str(), &path_stat) != 0) return false;
  return open_stat.st_dev == path_stat.st_dev && open_stat.st_ino == path_stat.st_ino;
}

}  // namespace

std::shared_ptr<const File> FetchSliceReader::OpenShared(const std::string& path) {
  std::shared_ptr<const File> held;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = open_files_.find(path);
    if (it != open_files_.end()) {
      held = it->second.lock();
      if (held == nullptr) open_files_.erase(it);
    }
  }
  if (held != nullptr && StillNamedBy(*held, path)) return held;
  Result<std::unique_ptr<File>> opened = fs_->Open(path, OpenMode::kRead);
  if (!opened.ok()) return nullptr;
  std::shared_ptr<const File> file(std::move(*opened));
  if (file->fd() < 0) return file;  // no identity to check: never shared
  std::lock_guard<std::mutex> lock(mu_);
  if (open_files_.size() >= 4 * max_cursors_) {
    std::erase_if(open_files_, [](const auto& entry) { return entry.second.expired(); });
  }
  open_files_[path] = file;
  return file;
}

// Copied, not taken: a fetch parked in the purgatory reads the same offset
// again on every wake.
std::optional<FetchSliceReader::Cursor> FetchSliceReader::FindCursor(const Log& log,
                                                                     int64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = cursors_.find({log.topic_partition(), offset});
  if (it == cursors_.end() || it->second.log != &log) return std::nullopt;
  return it->second;
}

void FetchSliceReader::PutCursor(const TopicPartition& tp, int64_t offset, Cursor cursor) {
  std::lock_guard<std::mutex> lock(mu_);
  Key key{tp, offset};
  if (cursors_.insert_or_assign(key, std::move(cursor)).second) order_.push_back(key);
  while (cursors_.size() > max_cursors_ && !order_.empty()) {
    cursors_.erase(order_.front());
    order_.pop_front();
  }
}

void FetchSliceReader::ForgetTopic(const std::string& topic) {
  std::lock_guard<std::mutex> lock(mu_);
  std::erase_if(cursors_, [&](const auto& entry) { return entry.first.first.topic == topic; });
  std::erase_if(order_, [&](const Key& key) { return key.first.topic == topic; });
}

size_t FetchSliceReader::cursors() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cursors_.size();
}

}  // namespace daruma::broker
