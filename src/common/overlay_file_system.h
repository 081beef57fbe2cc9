// OverlayFileSystem: a copy-on-write FileSystem over a base FileSystem, so the
// real loader (LoadLog) can run on a directory without changing one byte of it
// (`daruma check`, `daruma repair --dry-run`).
//
// Contract:
//  * The base is only ever read: files are opened kRead, directories listed,
//    sizes and times queried. No write, rename, removal, lock or fsync reaches
//    it, whatever the caller does through the overlay.
//  * Reads fall through to the base until a path is mutated. A mutated file is
//    held lazily: the base bytes below `base_limit` (the smallest size the file
//    was truncated to) plus the writes since, in order; bytes never written and
//    beyond base_limit read as zeros, exactly like a sparse POSIX file. Renames
//    move that state (so open handles follow the file, as with POSIX inodes);
//    removals leave a whiteout.
//  * Every mutation is recorded as a PlannedChange, in order. Consecutive
//    writes that extend one another on the same path are merged into one step.
//    Sync and SyncDir are no-ops and not recorded.
//  * Diff() compares the final state with the base, path by path.
//  * Optional page-cache hygiene: with drop_cache_after_read, every read from a
//    base file is followed by File::DropCache on the range read, so a check on
//    a live broker's directory does not evict the broker's working set.
// Thread safety: all methods and all Files it hands out may be used from any
// thread (one mutex per overlay).
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/file_system.h"

namespace daruma {

struct PlannedChange {
  enum class Kind {
    kCreate,      // a new file (or an existing one opened with kTruncate)
    kWrite,       // bytes [position, position + length) written
    kTruncate,    // size set to `size`
    kRename,      // path -> to
    kRemove,      // file removed
    kRemoveAll,   // directory tree removed
    kCreateDir,   // directory created
    kSetModTime,  // modification time set
  };
  Kind kind = Kind::kWrite;
  std::string path;
  std::string to;         // kRename only
  uint64_t position = 0;  // kWrite
  uint64_t length = 0;    // kWrite
  uint64_t size = 0;      // kTruncate

  std::string ToString() const;
};

const char* PlannedChangeKindName(PlannedChange::Kind kind);

// How one path differs between the base and the overlay's final state.
struct FileDiff {
  enum class Kind { kAdded, kRemoved, kModified };
  Kind kind = Kind::kModified;
  std::string path;
  uint64_t base_size = 0;  // 0 for kAdded
  uint64_t new_size = 0;   // 0 for kRemoved
  // kModified: the first byte position whose content differs (or the smaller
  // of the two sizes when one is a prefix of the other).
  uint64_t first_difference = 0;
};

struct OverlayOptions {
  bool drop_cache_after_read = false;
};

class OverlayFileSystem final : public FileSystem {
 public:
  using Options = OverlayOptions;
  explicit OverlayFileSystem(FileSystem* base, Options options = Options());
  ~OverlayFileSystem() override;

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Status RemoveAll(const std::string& path) override;
  Status CreateDir(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override;
  bool Exists(const std::string& path) override;
  Result<uint64_t> FileSize(const std::string& path) override;
  Result<int64_t> ModifiedTimeMs(const std::string& path) override;
  Status SetModifiedTimeMs(const std::string& path, int64_t ms) override;

  // Every mutation so far, in order.
  std::vector<PlannedChange> changes() const;
  // Files whose final state differs from the base, sorted by path (files
  // inside a tree removed with RemoveAll are not listed one by one). Reads the
  // base only where writes could have made the contents differ.
  Result<std::vector<FileDiff>> Diff();

  struct Node;  // the state of one mutated-or-opened file (defined in the .cc)

 private:
  // Requires mu_ held.
  std::shared_ptr<Node> FindLocked(const std::string& path);
  bool DirExistsLocked(const std::string& path);
  bool UnderRemovedTreeLocked(const std::string& path) const;
  void RecordLocked(PlannedChange change);

  FileSystem* base_;
  Options options_;
  mutable std::mutex mu_;
  // path -> node; a null node is a whiteout (removed in the overlay).
  std::map<std::string, std::shared_ptr<Node>> files_;
  std::set<std::string> created_dirs_;
  std::set<std::string> removed_trees_;
  std::vector<PlannedChange> changes_;
};

}  // namespace daruma
