// FaultInjectionFileSystem: a FileSystem decorator that counts every mutating
// operation and can crash, tear or fail the N-th one, while modelling which
// bytes and names would survive a power loss (LazyFS-style).
//
// Counted ("mutating") operations, numbered from 1 in call order:
//   create (Open of a missing file with kCreate/kCreateExclusive/kTruncate),
//   truncate (Open kTruncate of an existing file, File::Truncate), write,
//   sync (File::Sync), rename, remove, remove-all, create-dir, sync-dir,
//   sync-fs (SyncFileSystem: everything becomes durable, like syncfs).
// Reads, listings, stats and SetModifiedTimeMs are not counted.
//
// Durability model (what MaterializeDurableState writes):
//  * A file's durable contents are its contents at its last File::Sync (empty
//    if never synced). Writes and truncates after that are volatile.
//  * A name (file or directory entry) is durable only once SyncDir ran on its
//    parent after the entry was created, renamed or removed; until then the
//    durable parent keeps its previous entries (so an un-synced rename is
//    undone and an un-synced new file does not exist after a crash).
//  * Files and directories that existed in the base before this layer first
//    saw them are adopted as fully durable (a whole directory tree at once).
//  * Torn mode additionally applies a seeded-random prefix (0..all bytes) of
//    the last write that was not followed by a Sync of its file, on top of the
//    durable contents (holes read as zeros), if that file's name is durable.
//
// Faults:
//  * CrashAt(n): op n and every later operation (including reads) fail with
//    kIoError "injected crash"; op n is not performed. The test then drops
//    every object using this file system (the process died) and recovers on
//    the durable image (power loss) or on the base as it is (process kill,
//    page cache survives).
//  * FailAt(n, kind): op n alone fails with EIO/ENOSPC text and is not
//    performed; later operations proceed normally.
//  * FailPathsUnder(prefix): every operation on a path at or below prefix
//    (including reads and already-open files) fails with EIO. Not counted.
//
// Thread safety: all methods serialise on one mutex, so numbering is
// deterministic for single-threaded workloads.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/file_system.h"

namespace daruma::testing {

enum class InjectedError { kEio, kEnospc };

// How a crash matrix stops its workload at an operation: the process dies
// (kKill: the page cache survives), power is lost (kPower: only durable
// state), power is lost mid-write (kTorn), or the operation fails with
// EIO / ENOSPC (kEio, kEnospc).
enum class CrashMode { kKill, kPower, kTorn, kEio, kEnospc };

inline const char* CrashModeName(CrashMode m) {
  switch (m) {
    case CrashMode::kKill:
      return "kill";
    case CrashMode::kPower:
      return "power";
    case CrashMode::kTorn:
      return "torn";
    case CrashMode::kEio:
      return "eio";
    case CrashMode::kEnospc:
      return "enospc";
  }
  return "?";
}

class FaultInjectionFileSystem final : public FileSystem {
 public:
  explicit FaultInjectionFileSystem(FileSystem* base, uint64_t seed = 1);
  ~FaultInjectionFileSystem() override;

  // ---- fault control ----
  void CrashAt(uint64_t op);
  void FailAt(uint64_t op, InjectedError kind);
  void FailPathsUnder(const std::string& prefix);
  bool crashed() const;
  // Mutating operations attempted so far (including the failed/crashing one).
  uint64_t op_count() const;
  // "7 write /d/p-0/00000000000000000000.log @0+78", one per counted op.
  std::vector<std::string> op_log() const;

  // ---- images after a crash ----
  // Writes the durable directories and files at or below `root` into
  // `target` (which should not hold them yet). `tear` applies the torn last
  // write (see above).
  Status MaterializeDurableState(FileSystem* target, const std::string& root, bool tear) const;

  // ---- FileSystem ----
  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Status RemoveAll(const std::string& path) override;
  Status CreateDir(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  // Counted as "sync-fs": makes every live name and file content durable.
  Status SyncFileSystem(const std::string& path) override;
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override;
  bool Exists(const std::string& path) override;
  Result<uint64_t> FileSize(const std::string& path) override;
  Result<int64_t> ModifiedTimeMs(const std::string& path) override;
  Status SetModifiedTimeMs(const std::string& path, int64_t ms) override;

 private:
  class FaultFile;
  friend class FaultFile;
  using NodeId = uint64_t;
  struct Node {
    bool is_dir = false;
    std::map<std::string, NodeId> live;     // directory entries now
    std::map<std::string, NodeId> durable;  // directory entries after a power loss
    std::vector<uint8_t> data;              // file contents at the last Sync
  };
  struct PendingWrite {
    NodeId node = 0;
    uint64_t pos = 0;
    std::vector<uint8_t> bytes;
  };

  // Non-OK if the process is dead or `path` is failing; else Ok.
  Status CheckAliveLocked(const std::string& path) const;
  // Counts one mutating op; returns the injected failure if it is op n.
  Status BeginOpLocked(const std::string& what, const std::string& path);
  // The node of `path` in the live namespace (adopting it from the base if
  // never seen), or nullopt if it does not exist.
  std::optional<NodeId> ResolveLocked(const std::string& path);
  NodeId AdoptLocked(const std::string& path, bool is_dir);
  NodeId NewNodeLocked(bool is_dir);
  // Parent node and leaf name of `path`, creating untracked parents by
  // adoption; nullopt if the parent does not exist.
  std::optional<std::pair<NodeId, std::string>> ParentLocked(const std::string& path);
  Status SyncTreeLocked(NodeId id, const std::string& path);
  Status MaterializeNode(FileSystem* target, const std::string& path, NodeId id, bool tear) const;

  FileSystem* base_;
  mutable std::mutex mu_;
  std::map<NodeId, Node> nodes_;
  NodeId next_id_ = 1;  // 0 is the root "/"
  uint64_t ops_ = 0;
  std::optional<uint64_t> crash_at_;
  std::optional<uint64_t> fail_at_;
  InjectedError fail_kind_ = InjectedError::kEio;
  std::vector<std::string> failing_prefixes_;
  bool crashed_ = false;
  std::optional<PendingWrite> last_unsynced_write_;
  std::vector<std::string> op_log_;
  mutable std::mt19937_64 rng_;
};

}  // namespace daruma::testing
