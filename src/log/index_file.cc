#include "log/index_file.h"

#include <algorithm>
#include <cstring>

namespace daruma {
namespace {

// Kafka keeps the last 8 KiB of entries "warm" and searches there first.
constexpr size_t kWarmSectionBytes = 8192;
// Pending bytes up to this size are stored through the window, more with
// one pwrite (WritePending).
constexpr uint64_t kWindowStoreMaxBytes = 4096;
// An existing file this small is read without asking where its data ends.
constexpr uint64_t kReadWholeMaxBytes = 4096;

uint64_t RoundDown(int64_t size, size_t entry_size) {
  if (size <= 0) return 0;
  return uint64_t(size) / entry_size * entry_size;
}

}  // namespace

Result<std::unique_ptr<IndexFile>> IndexFile::Open(FileSystem* fs, const std::string& path,
                                                   size_t entry_size, const Options& options) {
  std::unique_ptr<IndexFile> index(new IndexFile(fs, path, entry_size, options));
  // Opening is the existence check (no separate stat of the path).
  Result<std::unique_ptr<File>> existing = fs->OpenWithSize(
      path, options.writable ? OpenMode::kReadWrite : OpenMode::kRead, &index->length_);
  if (!existing.ok()) {
    if (!existing.status().IsNotFound()) return existing.status();
    if (!options.writable) return Status::NotFound("index file " + path + " does not exist");
    // A new index: preallocated zeros, no entries.
    index->length_ = RoundDown(options.max_index_size, entry_size);
    if (options.defer_new_file) {
      index->deferred_ = true;
      return index;
    }
    // Created exclusively: the open just found no file, and a load's journal
    // then needs no check of its own that nothing is overwritten.
    DARUMA_ASSIGN_OR_RETURN(index->file_, fs->Open(path, OpenMode::kCreateExclusive));
    DARUMA_RETURN_IF_ERROR(index->file_->Truncate(index->length_));
    return index;
  }
  index->file_ = std::move(*existing);
  // Only the part before a trailing hole is read (see the contract). A file
  // of a page or less is read whole: looking for its hole would cost a
  // system call of its own (two a partition at a clean start), and zeros read
  // in place of a hole end the entries the same way (extent_ below).
  uint64_t data_end = index->length_;
  if (index->length_ > kReadWholeMaxBytes) {
    DARUMA_ASSIGN_OR_RETURN(data_end, index->file_->DataEnd());
    data_end = std::min(data_end, index->length_);
  }
  index->bytes_.resize(RoundDown(int64_t(data_end), entry_size));
  index->hole_entries_ =
      (RoundDown(int64_t(index->length_), entry_size) - index->bytes_.size()) / entry_size;
  DARUMA_ASSIGN_OR_RETURN(size_t n, index->file_->ReadAt(0, index->bytes_));
  index->written_ = n;
  if (n != index->bytes_.size()) {
    return Status::IoError("index file " + path + ": short read, expected " +
                           std::to_string(index->bytes_.size()) + " bytes, found " +
                           std::to_string(n));
  }
  // Zero entries at the end of what was read (a preallocated file that is
  // not sparse) are zeros on disk too. A trimmed index stops at its first
  // step back.
  uint64_t extent = index->bytes_.size();
  while (extent >= entry_size) {
    const uint8_t* e = index->bytes_.data() + extent - entry_size;
    if (std::any_of(e, e + entry_size, [](uint8_t b) { return b != 0; })) break;
    extent -= entry_size;
  }
  index->extent_ = extent;
  return index;
}

Status IndexFile::CreateDeferredFile() {
  // Exclusively, as Open creates: a file that appeared at path_ meanwhile
  // was not made by this object, and is not overwritten.
  DARUMA_ASSIGN_OR_RETURN(file_, fs_->Open(path_, OpenMode::kCreateExclusive));
  deferred_ = false;
  unsynced_ = true;
  // Written at the entries' size; the zeros up to length_ follow when an
  // append maps them or a size change sets the length (see unextended_size_).
  written_ = 0;
  extent_ = 0;
  unextended_size_ = 0;
  DARUMA_RETURN_IF_ERROR(WritePending(/*live_append=*/false));
  if (*unextended_size_ >= length_) unextended_size_.reset();
  return Status::Ok();
}

Status IndexFile::CheckOpen() const {
  if (file_ == nullptr && !deferred_)
    return Status::InvalidArgument("index file " + path_ + " is closed");
  return Status::Ok();
}

Status IndexFile::CheckWritable() const {
  DARUMA_RETURN_IF_ERROR(CheckOpen());
  if (!options_.writable) return Status::InvalidArgument("index file " + path_ + " is read-only");
  return Status::Ok();
}

Status IndexFile::AppendEntry(const uint8_t* entry) {
  DARUMA_RETURN_IF_ERROR(CheckWritable());
  if (entries() >= max_entries()) {
    return Status::InvalidArgument("attempt to append to a full index " + path_ +
                                   " (size = " + std::to_string(entries()) + ")");
  }
  MaterializeHole();
  bytes_.insert(bytes_.end(), entry, entry + entry_size_);
  return Status::Ok();
}

void IndexFile::MaterializeHole() {
  if (hole_entries_ == 0) return;
  const bool all_written = written_ == bytes_.size();
  bytes_.resize(bytes_.size() + hole_entries_ * entry_size_);
  hole_entries_ = 0;
  // The hole reads as these zeros on disk too.
  if (all_written) written_ = bytes_.size();
}

Status IndexFile::WritePending(bool live_append) {
  if (deferred_) return live_append ? CreateDeferredFile() : Status::Ok();
  if (written_ >= bytes_.size()) return Status::Ok();
  // A few entries (an append's) go through the mapped window: a store, not a
  // system call. A bulk write (an index rebuilt by recovery, hundreds of KiB)
  // goes through pwrite: faulting its fresh pages into the window one by one
  // cost recovery a tenth of its time.
  const ByteSpan pending(bytes_.data() + written_, bytes_.size() - written_);
  bool stored = false;
  if (pending.size() <= kWindowStoreMaxBytes &&
      (live_append || window_.Covers(written_, pending.size()))) {
    // A mapping must not reach past the file's end.
    if (unextended_size_) {
      DARUMA_RETURN_IF_ERROR(file_->Truncate(length_));
      unextended_size_.reset();
    }
    DARUMA_ASSIGN_OR_RETURN(stored, window_.Store(*file_, written_, pending, length_));
  }
  if (!stored) {
    DARUMA_RETURN_IF_ERROR(file_->WriteAt(
        written_, std::span<const uint8_t>(bytes_.data() + written_, bytes_.size() - written_)));
  }
  if (unextended_size_) unextended_size_ = std::max<uint64_t>(*unextended_size_, bytes_.size());
  written_ = bytes_.size();
  extent_ = std::max(extent_, written_);
  unsynced_ = true;
  return Status::Ok();
}

void IndexFile::TruncateToEntries(size_t n) {
  if (n < entries()) {
    const size_t stored = bytes_.size() / entry_size_;
    if (n <= stored) {
      bytes_.resize(n * entry_size_);
      hole_entries_ = 0;
    } else {
      hole_entries_ = n - stored;
    }
  }
  written_ = std::min<uint64_t>(written_, bytes_.size());
}

int64_t IndexFile::BinarySearch(int64_t target, const std::function<int64_t(size_t)>& key,
                                size_t begin, size_t end) const {
  size_t lo = begin;
  size_t hi = end;
  while (lo < hi) {
    const size_t mid = (lo + hi + 1) / 2;
    const int64_t found = key(mid);
    if (found > target) {
      hi = mid - 1;
    } else if (found < target) {
      lo = mid;
    } else {
      return int64_t(mid);
    }
  }
  return int64_t(lo);
}

int64_t IndexFile::LargestLowerBoundSlot(int64_t target,
                                         const std::function<int64_t(size_t)>& key) const {
  const size_t n = entries();
  if (n == 0) return -1;
  const size_t warm_entries = kWarmSectionBytes / entry_size_;
  const size_t first_hot = n - 1 > warm_entries ? n - 1 - warm_entries : 0;
  if (key(first_hot) < target) return BinarySearch(target, key, first_hot, n - 1);
  if (key(0) > target) return -1;
  return BinarySearch(target, key, 0, first_hot);
}

Status IndexFile::Resize(int64_t new_size, bool extend_file) {
  DARUMA_RETURN_IF_ERROR(CheckWritable());
  DARUMA_RETURN_IF_ERROR(WritePending());
  const uint64_t rounded = RoundDown(new_size, entry_size_);
  const uint64_t entry_bytes = uint64_t(entries()) * entry_size_;
  if (rounded < entry_bytes) {
    return Status::InvalidArgument(
        "cannot resize index " + path_ + " to " + std::to_string(rounded) + " bytes: it holds " +
        std::to_string(entries()) + " entries (" + std::to_string(entry_bytes) + " bytes)");
  }
  if (rounded == length_) return Status::Ok();
  if (deferred_) {
    // The zeros past the entries are not stored: the length is all there is.
    length_ = rounded;
    return Status::Ok();
  }
  window_.Release();
  // Trimming to the entries first makes every slot past entries() read as
  // zeros after growing (stale entries of an earlier, longer file vanish). A
  // crash in between leaves a trimmed index, which is a valid state. A file
  // already ending at its entries (a trimmed index) has nothing to clear.
  // The file ends at length_, or where unextended_size_ says.
  uint64_t on_disk = unextended_size_.value_or(length_);
  if (rounded > bytes_.size() && on_disk > bytes_.size()) {
    DARUMA_RETURN_IF_ERROR(file_->Truncate(bytes_.size()));
    on_disk = bytes_.size();
    extent_ = std::min(extent_, on_disk);
    unextended_size_ = on_disk;
    unsynced_ = true;
  }
  if (!extend_file && rounded > on_disk) {
    // The slots past the file's end read as the zeros a preallocated file
    // holds, and the first mapped append extends it (WritePending).
    unextended_size_ = on_disk;
    extent_ = std::min(extent_, on_disk);
    length_ = rounded;
    return Status::Ok();
  }
  if (on_disk != rounded) {
    DARUMA_RETURN_IF_ERROR(file_->Truncate(rounded));
    unsynced_ = true;
  }
  unextended_size_.reset();
  extent_ = std::min(extent_, rounded);
  length_ = rounded;
  return Status::Ok();
}

Status IndexFile::TrimThenResize(int64_t new_size) {
  DARUMA_RETURN_IF_ERROR(CheckWritable());
  DARUMA_RETURN_IF_ERROR(WritePending());
  const uint64_t entry_bytes = uint64_t(entries()) * entry_size_;
  if (deferred_ || RoundDown(new_size, entry_size_) != length_ || length_ < entry_bytes) {
    DARUMA_RETURN_IF_ERROR(TrimToValidSize());
    return Resize(new_size, /*extend_file=*/false);
  }
  if (extent_ <= entry_bytes) return Status::Ok();
  // Slots in a hole (hole_entries_) are zeros already: then extent_ is at
  // most bytes_.size(), below entry_bytes.
  const std::vector<uint8_t> zeros(size_t(extent_ - entry_bytes), 0);
  DARUMA_RETURN_IF_ERROR(file_->WriteAt(entry_bytes, zeros));
  extent_ = entry_bytes;
  unsynced_ = true;
  return Status::Ok();
}

Status IndexFile::Reset() {
  TruncateToEntries(0);
  return Resize(options_.max_index_size);
}

Status IndexFile::TrimToValidSize() {
  return Resize(int64_t(uint64_t(entries()) * entry_size_));
}

Status IndexFile::Flush() {
  DARUMA_RETURN_IF_ERROR(CheckOpen());
  if (!options_.writable) return Status::Ok();
  if (deferred_) DARUMA_RETURN_IF_ERROR(CreateDeferredFile());
  DARUMA_RETURN_IF_ERROR(WritePending());
  if (!unsynced_) return Status::Ok();
  DARUMA_RETURN_IF_ERROR(file_->Sync());
  unsynced_ = false;
  return Status::Ok();
}

Status IndexFile::Close() {
  if (file_ == nullptr && !deferred_) return Status::Ok();
  if (options_.writable) {
    if (deferred_) DARUMA_RETURN_IF_ERROR(CreateDeferredFile());
    // Trimmed and synced: a clean shutdown's marker must not outlive an index
    // that a power loss would leave preallocated (zero entries at the end).
    DARUMA_RETURN_IF_ERROR(TrimToValidSize());
    if (unsynced_) DARUMA_RETURN_IF_ERROR(file_->Sync());
    unsynced_ = false;
  }
  window_.Release();
  file_.reset();
  return Status::Ok();
}

Status IndexFile::DeleteIfExists(bool* existed) {
  window_.Release();
  file_.reset();
  if (deferred_) {
    deferred_ = false;
    if (existed != nullptr) *existed = false;
    return Status::Ok();
  }
  Status st = fs_->Remove(path_);
  if (existed != nullptr) *existed = st.ok();
  if (st.IsNotFound()) return Status::Ok();
  return st;
}

Status IndexFile::RenameTo(const std::string& new_path) {
  if (deferred_) {
    // What the rename would have replaced goes, as it would have.
    Status removed = fs_->Remove(new_path);
    if (!removed.ok() && !removed.IsNotFound()) return removed;
    path_ = new_path;
    return Status::Ok();
  }
  DARUMA_RETURN_IF_ERROR(fs_->Rename(path_, new_path));
  path_ = new_path;
  return Status::Ok();
}

}  // namespace daruma
