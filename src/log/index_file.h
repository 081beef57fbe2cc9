// IndexFile: the shared mechanics of the fixed-entry index files `.index` and
// `.timeindex` (spec §7.1). OffsetIndex and TimeIndex add the entry layout.
//
// Format: fixed-size big-endian entries, no header, no checksum. The file is
// "preallocated": a new file is extended with zeros to
// floor(max_index_size / entry_size) * entry_size bytes, and only the first
// entries() slots are meaningful.
//
// Deferred files (Options::defer_new_file: an index recovery rebuilds because
// it was missing). A missing file is not created at Open: the object keeps
// the entries in memory, and its file's content is defined as those entries
// followed by zeros up to length(). The file is created, written once and
// only then exists when its bytes must be on disk: Flush(), Close(), or a
// live append (WriteAppended). It is created at the entries' size, extended
// only when a mapped append needs the bytes, which Kafka's loader accepts
// (a trimmed index). Why this is safe: until it is created there is no
// file, and a missing .index is what the next load rebuilds from the .log
// in any case (Kafka does too); once created it is synced before Flush or
// Close returns. Between the two a crash can leave a file empty or half
// written, which a load would trust below the recovery point: the owning
// Log keeps its recovery point at or below a segment with a deferred index
// until a flush has created and synced it (Log::FlushLocked).
// What it saves: a crashed start whose indexes were lost creates no file for
// the segments below the active one (two creations per segment, most of a
// small partition's load on ext4); the next flush or the shutdown does.
//
// Contract:
//  * Opening an existing file takes entries() = floor(file length / entry size)
//    and never scans for zeroed slots (Kafka does the same). Slots in a
//    trailing hole of a sparse file (File::DataEnd: a preallocated index left
//    by a crash, 10 MiB by default) count as zero entries as in Kafka, but are
//    not read or stored, so a crashed start of many partitions costs kilobytes
//    per index, not megabytes. This is why an index must be trimmed
//    (TrimToValidSize/Close) before the segment is closed. A file of 4 KiB
//    or less is read whole, hole or not.
//  * The entries are kept in memory (entries() * entry_size bytes). Appended
//    entries reach the file by WriteAppended() after a live append: a few (up
//    to 4 KiB) are stored into a small writable mapping of the file
//    (MappedAppendWindow, one page first, then growing to kWriteWindowBytes,
//    never past length()) when the file allows it, more (or where mapping is
//    not possible) with one File::WriteAt for all. WritePending(), which
//    Flush(), Resize()/TrimToValidSize(), TrimThenResize() and Close() call,
//    never maps: it stores into a window already mapped, else writes. (A
//    rebuilt index is written once and then trimmed or closed: a mapping
//    made for it, an fallocate, mmap, madvise and a munmap whose TLB
//    shootdown interrupts the other cores, was dropped again right away.)
//    Every size change drops the mapping first.
//    A live append (LogSegment::Append) calls it after each entry, so a killed
//    broker leaves the same index bytes as Kafka's mmap; recovery's rebuild
//    writes once at the end, saving ~500,000 system calls per GiB rebuilt (an
//    index lost mid-rebuild is rebuilt again: its segment is past the recovery
//    point). An entry is durable after Flush() (fsync).
//  * TruncateToEntries() only forgets entries in memory; the bytes behind them
//    stay in the file until they are overwritten or trimmed (as with Kafka's mmap).
//  * A read-only IndexFile rejects every mutation with kInvalidArgument.
//  * While deferred, RenameTo only renames the path (removing a file at the
//    new path, which a rename would have replaced), DeleteIfExists finds
//    nothing, and size changes only set length().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/mapped_append_window.h"
#include "common/status.h"

namespace daruma {

class IndexFile {
 public:
  struct Options {
    int64_t base_offset = 0;
    // segment.index.bytes: the size a new or reset index is extended to.
    int32_t max_index_size = 10 * 1024 * 1024;
    bool writable = true;
    // A missing file is created only when its bytes must be on disk, and
    // extended to max_index_size only when a mapped append needs it (see
    // "Deferred files"): for an index recovery rebuilds. Otherwise a new
    // file is created and preallocated at once, as Kafka's is.
    bool defer_new_file = false;
  };

  // Opens `path`, creating and preallocating it when missing (writable only;
  // read-only opening of a missing file is kNotFound), or deferring that.
  static Result<std::unique_ptr<IndexFile>> Open(FileSystem* fs, const std::string& path,
                                                 size_t entry_size, const Options& options);

  IndexFile(const IndexFile&) = delete;
  IndexFile& operator=(const IndexFile&) = delete;

  const std::string& path() const { return path_; }
  int64_t base_offset() const { return options_.base_offset; }
  int32_t max_index_size() const { return options_.max_index_size; }
  size_t entry_size() const { return entry_size_; }
  size_t entries() const { return bytes_.size() / entry_size_ + hole_entries_; }
  // Slots available in the file as it is now: file length / entry size.
  size_t max_entries() const { return size_t(length_ / entry_size_); }
  // The file's length as Kafka's would be, in bytes (need not be a multiple
  // of entry_size): the file on disk may be shorter while unextended_size_
  // is set, its missing slots reading as zeros.
  uint64_t length() const { return length_; }
  bool writable() const { return options_.writable; }
  // The file does not exist yet (see "Deferred files").
  bool deferred() const { return deferred_; }
  // Creates a deferred file now, with the entries in it, unsynced.
  Status CreateIfDeferred() { return deferred_ ? CreateDeferredFile() : Status::Ok(); }

  // The bytes of entry `slot` (slot < entries()).
  const uint8_t* EntryBytes(size_t slot) const {
    const size_t pos = slot * entry_size_;
    return pos < bytes_.size() ? bytes_.data() + pos : kZeroEntry;
  }

  // Writes one entry into slot entries(). The caller checks ordering and fullness.
  Status AppendEntry(const uint8_t* entry);
  // Keeps the first n entries (n <= entries()); does not touch the file.
  void TruncateToEntries(size_t n);

  // Kafka's largestLowerBoundSlotFor: the slot of the largest entry whose key
  // is <= target, or -1. `key(slot)` gives an entry's search key. Checks the
  // warm section (the last 8192 / entry_size entries) first, exactly like
  // Kafka, so results on unsorted (e.g. zero-filled) data match Kafka's too.
  int64_t LargestLowerBoundSlot(int64_t target, const std::function<int64_t(size_t)>& key) const;

  // Re-sizes the file to floor(new_size / entry_size) * entry_size bytes,
  // keeping the entries. Fails if that is smaller than the entries' bytes.
  // With extend_file false, a growth sets length() and leaves the file as it
  // is (unextended_size_): the first mapped append extends it, and a file
  // trimmed back before any append (a clean start and its shutdown) never
  // changed size at all.
  Status Resize(int64_t new_size, bool extend_file = true);
  // Drops all entries and re-extends the file to max_index_size (a file not
  // extended yet whose length() is that already stays as it is).
  Status Reset();
  // Truncates the file to exactly entries() * entry_size bytes.
  Status TrimToValidSize();
  // Leaves the file as TrimToValidSize() then Resize(new_size, extend_file
  // false) would: the entries, then zeros up to length(), past the file's
  // end until the first mapped append extends it. So a recovery that finds
  // the file trimmed leaves it so, as the clean load's ResizeIndexes does,
  // and a second recovery changes nothing. When the file already has that
  // length (an active segment's preallocated index after recovery's
  // rebuild), the stale slots past the entries are zeroed in place instead:
  // no size change, which on ext4 is a journal update (and a discard where
  // mounted so), and the append mapping stays. A crash in between leaves
  // stale slots past the entries, as a crash mid-rebuild does: the segment
  // lies past the recovery point and is rebuilt again.
  Status TrimThenResize(int64_t new_size);
  // fsyncs the file.
  Status Flush();
  // Writes the appended entries that are not yet in the file, in one write
  // (into the append mapping only where it is mapped already).
  Status WritePending() { return WritePending(/*live_append=*/false); }
  // The same after a live append (LogSegment::Append): a few entries may map
  // the append window, so that the appends after it are stores.
  Status WriteAppended() { return WritePending(/*live_append=*/true); }
  // Trims (when writable) and releases the file handle.
  Status Close();
  // Releases the handle and removes the file; *existed tells whether it was there.
  Status DeleteIfExists(bool* existed);
  // Renames the file; later operations use the new path.
  Status RenameTo(const std::string& new_path);

 private:
  IndexFile(FileSystem* fs, std::string path, size_t entry_size, Options options)
      : fs_(fs), path_(std::move(path)), entry_size_(entry_size), options_(options) {}
  Status CheckWritable() const;
  Status CheckOpen() const;
  Status WritePending(bool live_append);
  // Creates a deferred file with the entries in it (see "Deferred files").
  Status CreateDeferredFile();
  int64_t BinarySearch(int64_t target, const std::function<int64_t(size_t)>& key, size_t begin,
                       size_t end) const;

  FileSystem* fs_;
  std::string path_;
  size_t entry_size_;
  Options options_;
  std::unique_ptr<File> file_;
  uint64_t length_ = 0;
  // The entries up to the file's first hole (the whole file when it is 4 KiB
  // or less, zeros of a hole included); the entries() - bytes_/entry_size
  // slots after them lie in the hole (hole_entries_) and read as zeros without
  // being stored (see the contract above).
  std::vector<uint8_t> bytes_;
  size_t hole_entries_ = 0;
  static constexpr uint8_t kZeroEntry[16] = {};
  // Stores the hole's zero entries before a change that needs them in bytes_.
  void MaterializeHole();
  // 64 KiB holds 8,192 offset entries, i.e. 32 MiB of log at the default
  // index.interval.bytes, per map call. Declared after file_: released first.
  static constexpr uint64_t kWriteWindowBytes = 64 << 10;
  // One page: most indexes of a partition hold a few entries (see
  // MappedAppendWindow on first_window_bytes).
  static constexpr uint64_t kFirstWriteWindowBytes = 4 << 10;
  MappedAppendWindow window_{kWriteWindowBytes, AppendFaults::kOnePage, kFirstWriteWindowBytes};
  // Invariant: bytes_[0, written_) are in the file at the same positions;
  // bytes_[written_, end) are appended but not yet written.
  uint64_t written_ = 0;
  // Invariant: file bytes [extent_, length_) are zeros: a trailing hole or
  // zero entries found at open, or cut by a size change and never written
  // since. What TrimThenResize must clear lies below it.
  uint64_t extent_ = 0;
  // The file changed (write or resize) since the last Sync.
  bool unsynced_ = false;
  // Set while the file is shorter than length_: its size on disk. That is a
  // file this object created and has not extended yet (where its writes
  // reached), or one Resize cut to its entries before growing it. Invariant:
  // the slots from there to length_ read as zeros, as in a preallocated
  // file, and the file is extended before a mapping reaches them.
  std::optional<uint64_t> unextended_size_;
  // Invariant: no file exists at path_ and file_ is null; the file's content
  // is bytes_ followed by zeros up to length_ (hole_entries_ is 0).
  bool deferred_ = false;
};

}  // namespace daruma
