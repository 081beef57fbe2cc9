// The load undo pack: one file per log dir holding the undo records that the
// batched start presaves for every partition it loads (log_dir_loader.cc),
// instead of one journal file per partition (load_journal.h).
//
// Why: a crashed start of 1,000 partitions created and then removed 1,000
// journal files. On ext4 each creation searches the inode bitmaps (past
// recently freed inodes) and each removal frees blocks (waiting on `discard`),
// and that was about half of the start: 0.70-0.80 ms per partition against
// 0.41 without any undo log. The pack is one file for the dir.
//
// `<log dir>/daruma-load-undo.pack` is the records of the partitions'
// presaves in the journal's framing (load_journal.h), in runs of whole
// records as the presaves (in parallel) wrote them. A record belongs to the
// partition dir it names (kCreateAny: the dir itself; any
// other kind: the dir of its file). Kafka's loader and Daruma's ignore it: a
// regular file in the log dir, not a partition dir.
//
// Invariants (with LogDirLoader's batched start):
//  * the pack is written and made durable (the presave's syncfs) before any
//    load changes a file; so a torn pack means no load ran;
//  * a load that needs a record the presave did not foresee starts a journal
//    file of its own with a copy of its packed records, and syncs it, first;
//  * the pack's removal is the commit point of every partition that has no
//    journal file of its own; it is made durable before those journal files
//    and undo dirs go, so no crash leaves a partition with only its newer
//    records (a partial rollback);
//  * at the next start, before anything reads the dir, every partition the
//    pack names is rolled back: its journal file's records (newest) and then
//    its packed ones (RollBackUndoDir), then the pack goes.
#pragma once

#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"
#include "recovery/load_journal.h"

namespace daruma {

inline constexpr char kLoadUndoPackFileName[] = "daruma-load-undo.pack";

inline std::string LoadUndoPackPath(const std::string& log_dir) {
  return JoinPath(log_dir, kLoadUndoPackFileName);
}

// The pack of one log dir while its partitions are presaved (in parallel)
// and loaded: each partition's presave appends its records in writes of up
// to 64 KiB (LoadJournal::FlushPackLocked), so memory never holds a whole
// partition's records (whole index files: 8 MiB for 1 GiB of 100-byte
// batches recovered from 0), and they are read back only if its load needs
// them (a journal file of its own, a rollback). Unsynced: the caller's
// SyncFileSystem makes it durable before any load starts. Thread-safe.
class LoadUndoPackWriter {
 public:
  // Creates the pack of `log_dir` (replacing any: the caller rolled it back).
  static Result<std::shared_ptr<LoadUndoPackWriter>> Create(FileSystem* fs,
                                                            const std::string& log_dir);
  // Appends whole records; returns the offset they start at.
  Result<uint64_t> Append(std::span<const uint8_t> bytes);
  // Reads out.size() bytes from `offset` (records Append wrote).
  Status Read(uint64_t offset, std::span<uint8_t> out) const;

 private:
  LoadUndoPackWriter(std::string path, std::unique_ptr<File> file)
      : path_(std::move(path)), file_(std::move(file)) {}
  const std::string path_;
  mutable std::mutex mu_;
  std::unique_ptr<File> file_;
  uint64_t size_ = 0;
};

// The records the pack of `log_dir` holds for `partition_dir` (none without
// a pack).
Result<std::vector<UndoRecord>> PackedUndoRecordsOf(FileSystem* fs, const std::string& log_dir,
                                                    const std::string& partition_dir);

// Rolls back every partition the pack of `log_dir` names (RollBackUndoDir,
// with its journal file if it has one), then removes the pack and syncs the
// dir. Returns the partition dirs rolled back; none without a pack.
Result<std::vector<std::string>> RollBackLoadUndoPack(FileSystem* fs, const std::string& log_dir);

}  // namespace daruma
