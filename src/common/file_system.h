// FileSystem: the one narrow interface through which the log engine touches
// disk. Every open/read/write/fsync/rename/truncate goes through it, so a
// fault-injecting implementation can stop, tear or fail any single operation,
// and every I/O error surfaces as a Status with code kIoError naming the path.
//
// Contract: implementations are thread-safe for distinct files. A File is used
// by one thread at a time unless stated otherwise; ReadAt is safe concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace daruma {

enum class OpenMode {
  kRead,             // existing file, read only
  kReadWrite,        // existing file, read/write
  kCreate,           // create if missing, read/write, keep contents
  kCreateExclusive,  // must not exist
  kTruncate,         // create or truncate to 0, read/write
};

// A read-only, zero-copy view of part of a file (an mmap), released when
// destroyed.
struct MappedRegion {
  virtual ~MappedRegion() = default;
  // Pages are mapped on first touch. A reader walking a long region calls
  // Populate for the part it is about to read (one call instead of a fault
  // per page) and Release for the part it is done with (the pages leave this
  // process's page tables, so its RSS stays bounded; the page cache keeps
  // them). Both are hints over [offset, offset + len) of `data`; Release
  // drops only pages lying wholly before offset + len.
  virtual void Populate(size_t /*offset*/, size_t /*len*/) const {}
  virtual void Release(size_t /*offset*/, size_t /*len*/) const {}
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// A writable, shared view of part of a file (an mmap; see
// File::MapForAppend), released when destroyed.
struct WritableMappedRegion {
  virtual ~WritableMappedRegion() = default;
  uint8_t* data = nullptr;
  size_t size = 0;
};

// How a store into a File::MapForAppend region fills the page cache when it
// touches a page not cached yet.
enum class AppendFaults {
  // The kernel's fault readahead: the pages around it too, up to the
  // device's read_ahead_kb (8 MiB on some disks). Right for a .log window,
  // whose next pages are the next appends.
  kReadAhead,
  // Only that page (MADV_RANDOM). Right for an index, preallocated to
  // segment.index.bytes (10 MiB) and mostly never written: readahead would
  // zero megabytes of page cache for the first 12-byte entry, milliseconds
  // per index (a tenth of an unclean recovery's time before this existed).
  kOnePage,
};

class File {
 public:
  virtual ~File() = default;
  File() = default;
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  // Reads up to out.size() bytes at pos; returns the count (short at EOF).
  virtual Result<size_t> ReadAt(uint64_t pos, std::span<uint8_t> out) const = 0;
  // Writes all of data at pos (the file grows as needed).
  virtual Status WriteAt(uint64_t pos, std::span<const uint8_t> data) = 0;
  // Durably stores the file's data (fdatasync semantics at least).
  virtual Status Sync() = 0;
  virtual Status Truncate(uint64_t size) = 0;
  virtual Result<uint64_t> Size() const = 0;
  // Where the file's data ends before its first hole (a sparse region never
  // written, e.g. a preallocated index): SEEK_HOLE, which the file system may
  // round up to its block size. Size() for a file without holes or a file
  // system that cannot tell.
  virtual Result<uint64_t> DataEnd() const { return Size(); }
  // The first byte at or after pos that may hold data (SEEK_DATA): bytes in
  // [pos, DataFrom(pos)) are a hole and read as zeros. When only a hole
  // follows, any value >= Size() (callers clamp it to the range they want;
  // not asking for the size saves a crashed partition's presave a stat per
  // index); pos for a file system that cannot tell.
  virtual Result<uint64_t> DataFrom(uint64_t pos) const { return pos; }
  // Advises the OS that the range will not be needed soon (page-cache drop).
  virtual void DropCache(uint64_t /*pos*/, uint64_t /*len*/) {}
  // Advises the OS that the range will be read soon (page-cache readahead).
  // May block while the reads are queued, so callers that want the disk to
  // overlap their CPU work call it from another thread.
  virtual void WillNeed(uint64_t /*pos*/, uint64_t /*len*/) {}
  // The OS file descriptor behind this file, for zero-copy sends (sendfile),
  // or -1 when there is none to use: decorators (fault injection, caches)
  // keep -1 so every read still goes through them.
  virtual int fd() const { return -1; }
  // Maps [pos, pos + len) read-only, or returns null when this file cannot be
  // mapped (the caller then uses ReadAt). The range must lie within the file,
  // and the file must not shrink while the region lives (touching a truncated
  // page is SIGBUS), so only a reader that owns the file exclusively, like
  // recovery under the log dir's lock, may map.
  virtual std::unique_ptr<MappedRegion> MapForRead(uint64_t /*pos*/, size_t /*len*/) const {
    return nullptr;
  }
  // Reserves disk blocks for [pos, pos + len) (the file grows to at least
  // pos + len) and maps that range writable and shared, so an appender
  // stores bytes with memcpy instead of one write() per append. The bytes are
  // ordinary page-cache data: ReadAt sees them at once, a process crash keeps
  // them and Sync() makes them durable, exactly as after WriteAt. The blocks
  // are reserved first so that a full disk is this call's error, not a SIGBUS
  // on a later store. The caller must not shrink the file below pos + len
  // while the region lives. A null region (not an error) means this file
  // cannot be mapped or its file system cannot reserve blocks: use WriteAt.
  // Decorators do not forward it by default, so a fault-injecting file system
  // still sees every write.
  //
  // `faults` says how a store into a page not yet cached fills the page
  // cache (AppendFaults).
  virtual Result<std::unique_ptr<WritableMappedRegion>> MapForAppend(uint64_t /*pos*/,
                                                                     size_t /*len*/,
                                                                     AppendFaults /*faults*/) {
    return std::unique_ptr<WritableMappedRegion>();
  }
  virtual const std::string& path() const = 0;
};

// The kIoError detail (Status::detail) of an operation refused because the
// process (EMFILE) or the system (ENFILE) has no descriptor left: a shortage
// that closing descriptors cures, not a failing disk, so it never takes a log
// dir offline (common/file_handle_cache.h releases handles and retries).
// Distinct from every other layer's kIoError details.
inline constexpr int kTooManyOpenFilesDetail = 0x4d46;

inline bool IsTooManyOpenFiles(const Status& status) {
  return status.IsIoError() && status.detail() == kTooManyOpenFilesDetail;
}

// The kIoError detail of an operation refused for the file's or directory's
// permissions (EACCES, EPERM: a mode, an owner, an immutable attribute): a
// fault of that one file, which an operator mends with chmod/chown/chattr,
// not of the disk under it. A partition whose load meets it fails alone
// (recovery/log_dir_loader.cc) instead of taking its log dir offline.
inline constexpr int kAccessDeniedDetail = 0x4144;

inline bool IsAccessDenied(const Status& status) {
  return status.IsIoError() && status.detail() == kAccessDeniedDetail;
}

// An I/O error that says something of the disk or the bytes on it: not a
// lack of descriptors, not a refused permission (both above), which concern
// the process or one file and leave the bytes as they are.
inline bool IsStorageIoError(const Status& status) {
  return status.IsIoError() && !IsTooManyOpenFiles(status) && !IsAccessDenied(status);
}

struct DirEntry {
  std::string name;
  bool is_directory = false;
  bool is_regular = false;
};

class FileSystem {
 public:
  virtual ~FileSystem() = default;

  virtual Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) = 0;
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status Remove(const std::string& path) = 0;
  // Removes a directory tree (used for -delete partition directories only).
  virtual Status RemoveAll(const std::string& path) = 0;
  virtual Status CreateDir(const std::string& path) = 0;
  virtual Status SyncDir(const std::string& path) = 0;
  // Makes every write and every name change made so far on the whole file
  // system holding `path` durable, at the cost of one device flush (Linux
  // syncfs): what lets a start-up or shutdown of thousands of partitions pay
  // for durability once instead of per file (deferred_sync_file_system.h).
  // kUnsupported where there is no such call; callers then sync per file.
  virtual Status SyncFileSystem(const std::string& path) {
    return Status::Unsupported("no whole-file-system sync for " + path);
  }
  virtual Result<std::vector<DirEntry>> ListDir(const std::string& path) = 0;
  virtual bool Exists(const std::string& path) = 0;
  virtual Result<uint64_t> FileSize(const std::string& path) = 0;
  // Last modification time in milliseconds since the epoch.
  virtual Result<int64_t> ModifiedTimeMs(const std::string& path) = 0;
  virtual Status SetModifiedTimeMs(const std::string& path, int64_t ms) = 0;

  // Writes `data` to path+".tmp", fsyncs it, renames it over `path` and fsyncs
  // the directory (spec §9.2). A crash at any step leaves either the old or the
  // new content under `path`.
  Status WriteFileAtomically(const std::string& path, std::span<const uint8_t> data);
  // Reads a whole (small) file. Virtual so that a handle cache can read
  // straight through its inner file system (one open, no cache slot); a
  // decorator that must see every read does not override it, and the default
  // then goes through its own Open.
  virtual Result<std::vector<uint8_t>> ReadFile(const std::string& path);
  // Opens an existing file (`mode` kRead or kReadWrite) and stores its size
  // in *size: Open then Size() by default, one stat where the open itself is
  // deferred (CachingFileSystem), which a clean start of 40,000 segments
  // otherwise pays twice per file.
  virtual Result<std::unique_ptr<File>> OpenWithSize(const std::string& path, OpenMode mode,
                                                     uint64_t* size);
  // Makes the content of the existing file `path` durable: Open then Sync by
  // default. A decorator that defers syncs (DeferredSyncFileSystem) answers
  // without opening, which a start that syncs a new snapshot per recovered
  // segment otherwise pays with a stat or an open each. ForwardingFileSystem
  // keeps the default, so a decorator that watches File::Sync (fault
  // injection, counting) still sees this sync.
  virtual Status SyncFile(const std::string& path);

  // The process-wide POSIX implementation.
  static FileSystem* Default();
};

std::string JoinPath(const std::string& dir, const std::string& name);
std::string ParentDir(const std::string& path);
std::string BaseName(const std::string& path);

}  // namespace daruma
