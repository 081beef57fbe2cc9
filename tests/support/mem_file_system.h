// MemFileSystem: a complete in-memory FileSystem for tests that must run many
// thousands of start-up cycles (crash and corruption matrices) without disk
// I/O. It is the usual base under FaultInjectionFileSystem.
//
// Semantics follow the POSIX implementation, with these deliberate choices:
//  * Paths are compared after normalisation (duplicate and trailing '/' are
//    removed); "." and ".." are not interpreted.
//  * CreateDir creates missing ancestors (mkdir -p), so a test can use real
//    absolute TempDir paths without mirroring /tmp first. Opening a file for
//    creation still requires its parent directory to exist.
//  * Sync and SyncDir are no-ops: everything is "durable" (the fault layer
//    above models durability).
//  * A File stays usable after its path is removed or renamed (an open fd).
//  * Modification times are wall-clock milliseconds set on every write.
//
// Thread safety: every method may be called from any thread.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "common/file_system.h"

namespace daruma::testing {

class MemFileSystem final : public FileSystem {
 public:
  // One file's bytes; shared between the namespace and open handles.
  struct Node {
    std::vector<uint8_t> data;
    int64_t mtime_ms = 0;
  };

  MemFileSystem() = default;

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Remove(const std::string& path) override;
  Status RemoveAll(const std::string& path) override;
  Status CreateDir(const std::string& path) override;
  Status SyncDir(const std::string& path) override;
  Status SyncFileSystem(const std::string&) override { return Status::Ok(); }
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override;
  bool Exists(const std::string& path) override;
  Result<uint64_t> FileSize(const std::string& path) override;
  Result<int64_t> ModifiedTimeMs(const std::string& path) override;
  Status SetModifiedTimeMs(const std::string& path, int64_t ms) override;

  // Every regular file at or below `root`, path -> contents (for comparisons).
  std::map<std::string, std::vector<uint8_t>> Files(const std::string& root) const;
  // Every directory at or below `root` (including root if it exists).
  std::vector<std::string> Dirs(const std::string& root) const;

  static std::string Normalize(const std::string& path);

 private:
  bool DirExistsLocked(const std::string& path) const;
  static bool IsUnder(const std::string& path, const std::string& root);

  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<Node>> files_;
  std::set<std::string> dirs_;
};

// Copies every directory and file at or below `root` from `from` to `to`
// (directories created with CreateDir, files written whole). Used to turn a
// crashed file system's image into a fresh one.
Status CopyTreeBetween(FileSystem* from, FileSystem* to, const std::string& root);

}  // namespace daruma::testing
