// LoadTransaction: makes loading (or repairing) one partition all or nothing
// with respect to its files (issue 25). A load that is refused, fails, or is
// interrupted by a crash leaves the partition dir byte for byte as it found
// it; only a load that succeeds changes it.
//
// How: every step of the load uses fs(), a FileSystem decorator that keeps an
// undo log. Before a mutation of a path under the partition dir reaches the
// base file system, what it destroys is saved and the record made durable:
//  * a write, truncation or writable map over bytes the file had before
//    saves those bytes (each original byte once; runs of zeros, such as a
//    preallocated index, as a length only);
//  * a removal, or a rename over an existing file, first moves that file
//    into the undo dir (a rename, no copy);
//  * a new file, directory or rename records how to take it back.
// Files created by the load itself are not saved again (their undo is their
// removal). Reads and fsyncs pass straight through.
//
// Undo log: `<partition dir>/daruma-load-undo.journal` (the records) and,
// only once a load moves a file aside, `<partition dir>/daruma-load-undo/`
// (the moved files). A batched start keeps the records it presaves for all
// of a dir's partitions in one file instead, the dir's pack
// (load_undo_pack.h); a load's journal file then exists only if it needs a
// record the presave did not foresee. Like daruma-quarantine, Kafka's loader and Daruma's
// ignore both (a regular file with no segment, index or snapshot suffix; a
// sub-directory).
//
// Invariant: when a record is durable, its mutation may or may not have
// happened; when it is not, its mutation has not happened. Each record's
// inverse is written for every such state, so rolling the records back
// newest first restores the old state after a crash at any step, and a
// rollback interrupted by a crash can simply be run again.
//
// Commit: fsyncs every file and directory a record names (the load synced
// most already), then deletes the journal (the commit point) and the undo
// dir. A crash before that point rolls the partition back on the next load (RollBackInterrupted):
// the next start sees the old state or the new one, never a mix.
//
// Cost: nothing on a load that changes nothing (a clean start); otherwise one
// fsync of the journal per newly saved group of bytes or names.
//
// Not covered: writes through a handle to a file after the load removed or
// renamed that file's name (the loader never does this).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"
#include "recovery/load_journal.h"
#include "recovery/recovery_report.h"

namespace daruma {

class LoadDirListing;
class LoadSnapshotCache;

class LoadTransaction {
 public:
  // Starts a transaction over `partition_dir`. Nothing is written until the
  // first mutation. `data` (default `base`): what fs() passes the load's own
  // operations to, e.g. a DeferredSyncFileSystem over `base`; the undo log
  // and the syncs that order it always use `base`.
  static std::shared_ptr<LoadTransaction> Begin(FileSystem* base, const std::string& partition_dir,
                                                FileSystem* data = nullptr);

  // If an earlier load of `partition_dir` was interrupted (its journal is
  // there), restores the state before it. Returns whether there was one.
  static Result<bool> RollBackInterrupted(FileSystem* base, const std::string& partition_dir);
  // The same, noting a rollback in report->warnings (load and repair).
  static Status RollBackInterrupted(FileSystem* base, const std::string& partition_dir,
                                    PartitionRecoveryReport* report);
  // The same, also applying the partition's records from the pack of
  // `log_dir` (load_undo_pack.h) without removing the pack: for `check`,
  // which rolls back in a throw-away overlay, one partition at a time.
  static Status RollBackInterruptedWithPack(FileSystem* base, const std::string& log_dir,
                                            const std::string& partition_dir,
                                            PartitionRecoveryReport* report);
  // The warning a report carries for a partition rolled back first.
  static std::string RolledBackWarning(const std::string& partition_dir, const char* file);

  ~LoadTransaction();
  LoadTransaction(const LoadTransaction&) = delete;
  LoadTransaction& operator=(const LoadTransaction&) = delete;

  // The file system every step must use. It stays valid (and passes
  // everything straight through after Commit) for as long as this object
  // lives; a loaded Log holds it.
  FileSystem* fs();
  // Whether any record was written (the dir was changed).
  bool changed() const;
  // Stops recording without committing: later mutations pass straight
  // through. For steps after the last one that can fail, when nothing was
  // recorded (a clean start's index resize).
  void StopRecordingIfUnchanged();
  // Before the load: saves the original content of `paths` and the dir's
  // names, and records how to put back each of `removable`
  // (LoadJournal::Presave), unsynced; the caller must make them durable
  // (SyncFileSystem) before the load starts.
  // With `pack`, the records go to the dir's pack (load_undo_pack.h)
  // instead of a journal file.
  Status Presave(const std::vector<DirEntry>& listing, const std::vector<std::string>& paths,
                 const std::vector<std::string>& removable,
                 std::shared_ptr<LoadUndoPackWriter> pack = nullptr);
  // Before the load, instead of Presave: `listing`, taken of the partition
  // dir after any rollback, is what the load's first listing returns
  // (load_dir_listing.h). Nothing may change the dir in between.
  void StartFromListing(const std::vector<DirEntry>& listing);
  uint64_t packed_size() const;
  // Whether the load began a journal file or undo dir of its own, which
  // FinishSealed removes (after the pack's removal is durable).
  bool HasFilesOfItsOwn() const;
  // Whether the load changed only files derived from the segments (indexes,
  // snapshots); if so, *files gets those it wrote (LoadJournal).
  bool ChangedOnlyDerivedFiles(std::vector<std::string>* files) const;
  const std::string& partition_dir() const;
  // Makes the new state durable and final.
  Status Commit();
  // Commit in two halves for a caller that makes many partitions durable at
  // once: Seal() after the load (no more records), then SyncFileSystem by
  // the caller, then FinishSealed() (removes the undo log, unsynced), then
  // SyncFileSystem again before anything relies on the new state. A crash
  // before the undo log's removal is durable rolls the partition back.
  void Seal();
  Status FinishSealed();
  // Restores the old state; the undo dir is gone afterwards.
  Status Rollback();
  // After `failure` of the load or repair (whose Log the caller has closed
  // and dropped): rolls back and returns `failure`, with the rollback's
  // error added if that failed too. Once rolled back, none of what *report
  // lists as quarantined, deleted, rebuilt or truncated happened, and it
  // says the partition was left unchanged.
  Status RollbackAfter(const Status& failure, PartitionRecoveryReport* report);

 private:
  LoadTransaction(FileSystem* base, const std::string& partition_dir, FileSystem* data);
  void ForgetCaches();

  std::shared_ptr<LoadJournal> journal_;
  std::shared_ptr<LoadDirListing> listing_;
  std::shared_ptr<LoadSnapshotCache> snapshots_;
  std::unique_ptr<FileSystem> fs_;
};

}  // namespace daruma
