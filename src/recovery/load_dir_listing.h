// LoadDirListing: the names of a partition dir as a load leaves them, kept by
// the load's journaling file system (load_transaction.h) so that the load
// lists the dir once instead of after each step that changes it.
//
// Why: a load lists its partition dir before it starts (the presave, or a
// clean start's check for an interrupted load: LoadTransaction::Presave and
// StartFromListing hand that listing over), then
// again wherever a step may have changed it: each recovered segment's
// producer state, and pass 6's stray-snapshot check. On a crashed start of
// 1,000 partitions those repeated listings were five system calls each and a
// tenth of the start's time. Every change the load makes to the dir passes
// through the journaling file system, which tells this object.
//
// Invariant: while the journal records, a listing served here names exactly
// the entries the dir has, but for the undo log's own file and dir (written
// beneath the journaling file system; every loader ignores them). The order
// of entries is not a listing's order (callers sort or index them). After
// any change whose outcome is unknown (a failed rename or removal) the
// listing is dropped, and the next request lists the dir again.
#pragma once

#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "common/file_system.h"

namespace daruma {

class LoadDirListing {
 public:
  explicit LoadDirListing(std::string dir) : dir_(std::move(dir)) {}

  const std::string& dir() const { return dir_; }

  // The listing, if one is held.
  std::optional<std::vector<DirEntry>> Get() const;
  // Holds `listing`, taken of dir() before any change this object missed.
  void Set(std::vector<DirEntry> listing);
  // Drops the listing: the next request lists the dir.
  void Forget();
  // Whether `path`, an entry directly in dir(), exists, as the held listing
  // says; nullopt when none is held or `path` lies elsewhere.
  std::optional<bool> Has(const std::string& path) const;

  // After a successful change of `path` (only entries directly in dir()
  // matter; others are ignored).
  void Created(const std::string& path, bool is_directory);
  void Removed(const std::string& path);
  void Renamed(const std::string& from, const std::string& to);

 private:
  bool InDir(const std::string& path) const;
  std::vector<DirEntry>::const_iterator FindLocked(const std::string& name) const;

  const std::string dir_;
  mutable std::mutex mu_;
  std::optional<std::vector<DirEntry>> listing_;
};

}  // namespace daruma
