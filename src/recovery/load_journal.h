// LoadJournal: the undo log behind LoadTransaction (load_transaction.h).
//
// JOURNAL format: a sequence of records, each
//   u32 payload length | u32 CRC-32C of the payload | payload
// A payload starts with a u8 kind; strings are u32 length + bytes, integers
// big-endian u64. Reading stops at the first record that is short or fails
// its CRC: it was being written when the process stopped, so (the record
// being made durable before its mutation starts) its mutation never ran.
//
// Kinds and their inverses (applied newest first, each correct whether or
// not its mutation ran, and again after a rollback that was cut short):
//   kCreate(path)            remove `path` if present
//   kCreateDir(path)         remove the directory tree if present
//   kRename(from, to, undo)  if `to` exists and `from` does not: rename back;
//                            then, if `undo` is set, exists and `to` does not:
//                            rename `undo` to `to` (the file `to` replaced)
//   kRemove(path, undo)      if `undo` exists and `path` does not: rename back
//   kSave(path, size, ranges) if `path` exists: truncate to `size`, write
//                            the saved ranges (zero runs as zeros)
//   kModTime(path, ms)       if `path` exists: set its modification time
//   kCreateAny(dir, names)   remove every regular file directly in `dir`
//                            whose name is not in `names` (the listing
//                            when the record was written; `to` holds the
//                            names, each ended by a NUL byte). Written by
//                            Presave, so files the load creates later in
//                            `dir` under new names need no record of their
//                            own.
//   kReplace(path, undo)     if `undo` exists: remove `path` if present and
//                            rename `undo` to `path`. Written by Presave for
//                            a file the load may remove (and write again):
//                            harmless if it never did, and once it did, the
//                            removal and any new file under the name need
//                            no record of their own.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"

namespace daruma {

class LoadUndoPackWriter;  // load_undo_pack.h

// `<partition dir>/daruma-load-undo.journal` holds the records; the files a
// load moves aside go to `<partition dir>/daruma-load-undo/`, created only
// when a load first moves one. Kafka's loader and Daruma's ignore both: a
// regular file without a segment, index or snapshot suffix, and a
// sub-directory. (Before, the journal lived in the undo dir as JOURNAL;
// RollBackUndoDir still rolls such a dir back.)
inline constexpr char kLoadUndoDirName[] = "daruma-load-undo";
inline constexpr char kLoadJournalFileName[] = "daruma-load-undo.journal";

struct SavedRange {
  uint64_t position = 0;
  uint64_t length = 0;
  bool zeros = false;  // a run of zero bytes: `bytes` is empty
  std::vector<uint8_t> bytes;
};

struct UndoRecord {
  enum class Kind : uint8_t {
    kCreate = 1,
    kCreateDir = 2,
    kRename = 3,
    kRemove = 4,
    kSave = 5,
    kModTime = 6,
    kCreateAny = 7,
    kReplace = 8,
  };
  Kind kind = Kind::kCreate;
  std::string path;                // kRename: from
  std::string to;                  // kRename only
  std::string undo;                // kRename, kRemove: where the replaced/removed file went
  uint64_t size = 0;               // kSave: size before; kModTime: milliseconds
  std::vector<SavedRange> ranges;  // kSave
};

std::vector<uint8_t> EncodeUndoRecord(const UndoRecord& r);
// Decodes the journal's records up to the first incomplete or corrupt one.
std::vector<UndoRecord> DecodeUndoRecords(const std::vector<uint8_t>& journal);
// Applies the inverses of `records`, newest first, then makes the restored
// files and names durable.
Status ApplyUndoRecords(FileSystem* fs, const std::vector<UndoRecord>& records);
// Rolls back an interrupted load of `partition_dir` if its journal is there
// (the records, then the journal and the undo dir), also a journal inside
// the undo dir as written before; an undo dir without a journal is what a
// committed load left: it is removed. Returns whether a journal was rolled
// back.
// `packed`: the partition's records from its dir's pack (load_undo_pack.h),
// older than its journal file's; with them the partition is rolled back
// even if it has no journal file.
Result<bool> RollBackUndoDir(FileSystem* fs, const std::string& partition_dir,
                             const std::vector<UndoRecord>& packed = {});

// The current name of a file opened through the journaling file system:
// renames and removals made through it move the name, so a later write
// through the handle is recorded under the name the file has then.
struct OpenPathCell {
  std::string path;  // empty: not recorded (the file's name was removed)
};

// The runtime side: decides what each mutation must save and appends the
// records. Thread-safe (one mutex).
class LoadJournal {
 public:
  // `base` holds the journal, the undo dir and every sync that orders a
  // record before its change; `data` (default: `base`) is what the load's
  // own reads, writes and syncs go through (a DeferredSyncFileSystem over
  // `base` when the caller makes the whole dir durable at once).
  LoadJournal(FileSystem* base, std::string partition_dir, FileSystem* data = nullptr);

  FileSystem* base() const { return base_; }
  const std::string& dir() const { return dir_; }
  FileSystem* data() const { return data_; }
  bool recording() const;
  bool changed() const;
  void StopRecording();

  // Whether `path` is one this journal records (under the partition dir and
  // not inside the undo dir), while recording.
  bool Covers(const std::string& path) const;

  // Sync bookkeeping (see changed_at_): the counter before a sync starts,
  // and the sync of `path` (a file's content or a directory's names) that
  // started at `counter` succeeded.
  uint64_t ChangeCounter() const;
  void NoteSynced(const std::string& path, uint64_t counter);
  void NoteSynced(const OpenPathCell& cell, uint64_t counter);
  // A cell following the file now named `path`.
  std::shared_ptr<OpenPathCell> Track(const std::string& path);

  // Hooks, called before the mutation; an error means "do not mutate".
  Status BeforeCreate(const std::string& path);  // only for a path that does not exist
  // Whether creating `path` needs no record, because the presaved listing
  // lacks its name (its kCreateAny record removes it). Such a file may be
  // created with kCreateExclusive and then noted by AfterUnlistedCreate,
  // with no existence check first: the exclusive open fails, and nothing is
  // noted, where the name exists after all.
  bool CreatesUnlisted(const std::string& path) const;
  void AfterUnlistedCreate(const std::string& path);
  Status BeforeCreateDir(const std::string& path);
  // Saves what [position, position + length) of the file `cell` names (open
  // as `file`) holds, where it is original content not yet saved.
  Status BeforeOverwrite(const OpenPathCell& cell, File* file, uint64_t position, uint64_t length);
  Status BeforeTruncate(const OpenPathCell& cell, File* file, uint64_t new_size);
  Status BeforeSetModTime(const std::string& path);
  // Performs the removal / rename itself (moving replaced files aside).
  Status Remove(const std::string& path);
  Status Rename(const std::string& from, const std::string& to);

  // Saves, before the load starts, what it will most likely change: the
  // whole original content of each of `paths` that exists (as kSave
  // records), and the names of the partition dir (kCreateAny), so that the
  // load's rebuild of those files and its new files need no record, and no
  // fsync, of their own; and for each of `removable` that exists, a kReplace
  // record, so that its removal (and a new file under its name) needs none
  // either. Nothing is synced here: the caller makes the records durable
  // (SyncFileSystem) before the load may change anything.
  // `listing` is the partition dir's entries, as the caller just listed it.
  //
  // With `pack`, the records go to the dir's pack (load_undo_pack.h), which
  // the caller syncs, instead of the partition's journal file: no journal
  // file is created for a load that records nothing else. If the load later
  // needs a record of its own, its journal file starts with a copy of these
  // (so it alone undoes the load), and a rollback in this process reads
  // them back from the pack.
  Status Presave(const std::vector<DirEntry>& listing, const std::vector<std::string>& paths,
                 const std::vector<std::string>& removable,
                 std::shared_ptr<LoadUndoPackWriter> pack = nullptr);
  // The bytes of the records Presave(..., pack) put in the pack.
  uint64_t packed_size() const;
  // Whether the load began a journal file or an undo dir in the partition
  // dir (FinishSealed removes them).
  bool HasFilesOfItsOwn() const;
  // Whether every change so far went to files derived from the partition's
  // segments: indexes, time and transaction indexes, producer snapshots
  // (created, written, truncated, renamed among themselves or removed). Kept
  // past Seal. If so, *files gets the ones written, created or truncated.
  // Such changes may stay unsynced for as long as the recovery point stays
  // below them: the next unclean start rebuilds them from the segments
  // (LogDirLoader::LoadPartition).
  bool ChangedOnlyDerivedFiles(std::vector<std::string>* files) const;

  // Syncs every file and directory the records name, then deletes the undo
  // dir (the new state is final).
  Status Commit();
  // The first half of a commit whose durability the caller provides: stops
  // recording. The caller then makes every change durable (SyncFileSystem),
  // and only then calls FinishSealed, which deletes the undo dir without a
  // sync of its own (the caller syncs again before relying on it).
  void Seal();
  Status FinishSealed();
  // Restores the old state and deletes the undo dir.
  Status Rollback();

 private:
  // Per path: what is known about the file now under that name.
  struct PathState {
    bool fresh = false;  // created by this load: nothing to save
    uint64_t original_size = 0;
    bool size_recorded = false;
    // Saved ranges of original content, [start, end), disjoint.
    std::map<uint64_t, uint64_t> saved = {};
  };
  bool CoversLocked(const std::string& path) const;
  bool UnlistedLocked(const std::string& path) const;
  Status AppendLocked(const UndoRecord& r);
  Status EnsureJournalLocked();
  // Before the first file is moved into the undo dir.
  Status EnsureUndoDirLocked(bool sync);
  // Removes the journal (the commit point), then what the undo dir holds.
  Status RemoveUndoLogLocked(bool sync);
  std::string NextUndoPathLocked();
  Result<PathState*> StateLocked(const std::string& path, File* file);
  void MoveNameLocked(const std::string& from, const std::string& to);
  void NoteChangeLocked(const std::string& path);  // content, or names of a dir
  // A file's content or name changes: tracks ChangedOnlyDerivedFiles.
  void NoteFileChangeLocked(const std::string& path);
  bool DerivedLocked(const std::string& path) const;
  Status SaveLocked(const std::string& path, File* file, uint64_t from, uint64_t to);
  // The pack (Presave(..., pack)): to_pack_ written out, a run of records
  // written, and the records read back.
  Status FlushPackLocked();
  Status WritePackLocked(std::span<const uint8_t> records);
  Result<std::vector<uint8_t>> PackedLocked() const;

  FileSystem* base_;
  FileSystem* data_;
  const std::string dir_;
  const std::string undo_dir_;
  const std::string journal_path_;
  bool undo_dir_made_ = false;
  mutable std::mutex mu_;
  // Read without the lock on every write of a loaded log (the append path);
  // changed only under mu_.
  std::atomic<bool> recording_{true};
  std::unique_ptr<File> journal_;
  uint64_t journal_size_ = 0;
  uint64_t next_undo_ = 0;
  std::map<std::string, PathState> paths_;
  // Names in the partition dir when Presave ran (valid if `listed_`): a
  // file created under any other name is undone by the kCreateAny record.
  bool listed_ = false;
  std::set<std::string> listing_;
  // While Presave writes its records (the caller syncs them all at once).
  bool defer_record_syncs_ = false;
  // While Presave(..., pack) runs, records collect in to_pack_, written to
  // pack_ once kPackWriteBytes are there and at its end; packed_ are where
  // (offset, length), in the order written.
  static constexpr size_t kPackWriteBytes = 64 << 10;
  bool packing_ = false;
  std::vector<uint8_t> to_pack_;
  std::shared_ptr<LoadUndoPackWriter> pack_;
  std::vector<std::pair<uint64_t, uint64_t>> packed_;
  uint64_t packed_size_ = 0;
  // kReplace records not used yet: path -> its undo name; and the paths
  // whose original went to the undo dir under one (a new file there needs
  // no kCreate).
  std::map<std::string, std::string> replaceable_;
  std::set<std::string> replaced_;
  std::vector<std::weak_ptr<OpenPathCell>> cells_;
  // Durability bookkeeping, so Commit syncs only what the load left
  // unsynced: per file or directory path, the change counter at its last
  // change, and the counter when its last successful sync started.
  uint64_t changes_ = 0;
  std::map<std::string, uint64_t> changed_at_;
  std::map<std::string, uint64_t> synced_at_;
  // ChangedOnlyDerivedFiles: cleared by nothing, Seal included.
  bool only_derived_ = true;
  std::set<std::string> derived_changed_;
};

}  // namespace daruma
