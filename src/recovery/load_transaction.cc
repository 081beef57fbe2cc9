#include "recovery/load_transaction.h"

#include <fmt/format.h>

#include <utility>

#include "recovery/load_dir_listing.h"
#include "recovery/load_snapshot_cache.h"
#include "recovery/load_undo_pack.h"

namespace daruma {

namespace {

// A file opened for writing through the journaling file system: every
// mutation asks the journal first. After the transaction ends the journal
// records nothing and this is a plain pass-through (a loaded Log keeps using
// it for appends).
class JournaledFile final : public File {
 public:
  JournaledFile(std::unique_ptr<File> base, std::shared_ptr<LoadJournal> journal,
                std::shared_ptr<OpenPathCell> cell)
      : base_(std::move(base)), journal_(std::move(journal)), cell_(std::move(cell)) {}

  Result<size_t> ReadAt(uint64_t pos, std::span<uint8_t> out) const override {
    return base_->ReadAt(pos, out);
  }
  Status WriteAt(uint64_t pos, std::span<const uint8_t> data) override {
    if (journal_->recording()) {
      DARUMA_RETURN_IF_ERROR(journal_->BeforeOverwrite(*cell_, base_.get(), pos, data.size()));
    }
    return base_->WriteAt(pos, data);
  }
  Status Sync() override {
    const uint64_t counter = journal_->ChangeCounter();
    DARUMA_RETURN_IF_ERROR(base_->Sync());
    if (journal_->recording()) journal_->NoteSynced(*cell_, counter);
    return Status::Ok();
  }
  Status Truncate(uint64_t size) override {
    if (journal_->recording()) {
      DARUMA_RETURN_IF_ERROR(journal_->BeforeTruncate(*cell_, base_.get(), size));
    }
    return base_->Truncate(size);
  }
  Result<uint64_t> Size() const override { return base_->Size(); }
  Result<uint64_t> DataEnd() const override { return base_->DataEnd(); }
  Result<uint64_t> DataFrom(uint64_t pos) const override { return base_->DataFrom(pos); }
  void DropCache(uint64_t pos, uint64_t len) override { base_->DropCache(pos, len); }
  void WillNeed(uint64_t pos, uint64_t len) override { base_->WillNeed(pos, len); }
  int fd() const override { return base_->fd(); }
  std::unique_ptr<MappedRegion> MapForRead(uint64_t pos, size_t len) const override {
    return base_->MapForRead(pos, len);
  }
  // Forwarded (unlike other decorators): stores into the region bypass this
  // object, so the whole range is saved before it is handed out.
  Result<std::unique_ptr<WritableMappedRegion>> MapForAppend(uint64_t pos, size_t len,
                                                             AppendFaults faults) override {
    if (journal_->recording()) {
      DARUMA_RETURN_IF_ERROR(journal_->BeforeOverwrite(*cell_, base_.get(), pos, len));
    }
    return base_->MapForAppend(pos, len, faults);
  }
  const std::string& path() const override { return base_->path(); }

 private:
  std::unique_ptr<File> base_;
  std::shared_ptr<LoadJournal> journal_;
  std::shared_ptr<OpenPathCell> cell_;
};

class JournalingFileSystem final : public FileSystem {
 public:
  JournalingFileSystem(std::shared_ptr<LoadJournal> journal,
                       std::shared_ptr<LoadDirListing> listing,
                       std::shared_ptr<LoadSnapshotCache> snapshots)
      : journal_(std::move(journal)),
        base_(journal_->data()),
        listing_(std::move(listing)),
        snapshots_(std::move(snapshots)) {}

  Result<std::unique_ptr<File>> Open(const std::string& path, OpenMode mode) override {
    if (mode == OpenMode::kRead || !journal_->Covers(path)) return base_->Open(path, mode);
    DARUMA_ASSIGN_OR_RETURN(auto file, OpenCovered(path, mode));
    return Writing(path, mode, std::move(file));
  }
  Result<std::unique_ptr<File>> OpenCovered(const std::string& path, OpenMode mode) {
    std::unique_ptr<File> file;
    if (mode == OpenMode::kCreateExclusive && journal_->CreatesUnlisted(path)) {
      // A new index of a segment being rebuilt, usually: one open, no
      // existence check (see CreatesUnlisted).
      DARUMA_ASSIGN_OR_RETURN(file, base_->Open(path, mode));
      journal_->AfterUnlistedCreate(path);
      listing_->Created(path, /*is_directory=*/false);
      return Wrap(path, std::move(file));
    }
    // The held listing answers while the journal records (load_dir_listing.h):
    // a crashed partition's new producer snapshot needs no check of its own.
    std::optional<bool> listed;
    if (journal_->recording()) listed = listing_->Has(path);
    const bool exists = listed ? *listed : base_->Exists(path);
    if (!exists && mode != OpenMode::kReadWrite) {
      DARUMA_RETURN_IF_ERROR(journal_->BeforeCreate(path));
      DARUMA_ASSIGN_OR_RETURN(file, base_->Open(path, mode));
      listing_->Created(path, /*is_directory=*/false);
      return Wrap(path, std::move(file));
    }
    if (exists && mode == OpenMode::kTruncate) {
      // Truncating on open destroys the old bytes: save them first.
      DARUMA_ASSIGN_OR_RETURN(file, base_->Open(path, OpenMode::kReadWrite));
      auto wrapped = Wrap(path, std::move(file));
      DARUMA_RETURN_IF_ERROR(wrapped->Truncate(0));
      return wrapped;
    }
    DARUMA_ASSIGN_OR_RETURN(file, base_->Open(path, mode));
    return Wrap(path, std::move(file));
  }
  Result<std::unique_ptr<File>> OpenWithSize(const std::string& path, OpenMode mode,
                                             uint64_t* size) override {
    if (mode == OpenMode::kRead || !journal_->Covers(path)) {
      return base_->OpenWithSize(path, mode, size);
    }
    if (mode == OpenMode::kReadWrite) {
      // Opens an existing file only, creating nothing (as Open): no record,
      // and the size comes with the open (one stat where the open is
      // deferred) instead of an existence check and a stat of its own. A
      // name the held listing lacks is not there, with no stat at all: an
      // index a crashed start finds missing (the load creates it next).
      if (journal_->recording() && listing_->Has(path) == std::optional<bool>(false)) {
        return Status::NotFound("open " + path + ": no such file (not in the load's listing)");
      }
      DARUMA_ASSIGN_OR_RETURN(auto file, base_->OpenWithSize(path, mode, size));
      return Writing(path, mode, Wrap(path, std::move(file)));
    }
    DARUMA_ASSIGN_OR_RETURN(auto file, Open(path, mode));
    DARUMA_ASSIGN_OR_RETURN(*size, file->Size());
    return file;
  }
  Status Rename(const std::string& from, const std::string& to) override {
    snapshots_->Forget(from);
    snapshots_->Forget(to);
    Status st = journal_->Rename(from, to);
    if (st.ok()) {
      listing_->Renamed(from, to);
    } else {
      listing_->Forget();
    }
    return st;
  }
  Status Remove(const std::string& path) override {
    snapshots_->Forget(path);
    return Removed(path, journal_->Remove(path));
  }
  Status RemoveAll(const std::string& path) override {
    snapshots_->Forget("");
    // Only a directory the load created itself (a fresh quarantine dir) or
    // one outside the partition is ever removed whole; anything else moves
    // aside like a file.
    if (!journal_->Covers(path)) return Removed(path, base_->RemoveAll(path));
    return Removed(path, journal_->Remove(path));
  }
  Status CreateDir(const std::string& path) override {
    if (journal_->Covers(path) && !base_->Exists(path)) {
      DARUMA_RETURN_IF_ERROR(journal_->BeforeCreateDir(path));
    }
    Status st = base_->CreateDir(path);
    if (st.ok()) {
      listing_->Created(path, /*is_directory=*/true);
    } else {
      listing_->Forget();
    }
    return st;
  }
  Status SyncDir(const std::string& path) override {
    return Synced(path, [&] { return base_->SyncDir(path); });
  }
  Status SyncFile(const std::string& path) override {
    return Synced(path, [&] { return base_->SyncFile(path); });
  }
  // The partition dir is listed once per load (load_dir_listing.h); only
  // this load changes it while the journal records.
  Result<std::vector<DirEntry>> ListDir(const std::string& path) override {
    if (path != listing_->dir() || !journal_->recording()) return base_->ListDir(path);
    if (std::optional<std::vector<DirEntry>> held = listing_->Get()) return std::move(*held);
    Result<std::vector<DirEntry>> listed = base_->ListDir(path);
    if (listed.ok()) listing_->Set(*listed);
    return listed;
  }
  bool Exists(const std::string& path) override { return base_->Exists(path); }
  Result<uint64_t> FileSize(const std::string& path) override { return base_->FileSize(path); }
  Result<int64_t> ModifiedTimeMs(const std::string& path) override {
    return base_->ModifiedTimeMs(path);
  }
  Status SetModifiedTimeMs(const std::string& path, int64_t ms) override {
    DARUMA_RETURN_IF_ERROR(journal_->BeforeSetModTime(path));
    return base_->SetModifiedTimeMs(path, ms);
  }
  // A producer snapshot is read from disk once per load (see
  // load_snapshot_cache.h).
  Result<std::vector<uint8_t>> ReadFile(const std::string& path) override {
    if (!LoadSnapshotCache::Keeps(path) || !journal_->recording() || !journal_->Covers(path)) {
      return base_->ReadFile(path);
    }
    if (std::optional<std::vector<uint8_t>> held = snapshots_->Get(path)) return std::move(*held);
    return snapshots_->Read(base_, path);
  }

 private:
  std::unique_ptr<File> Wrap(const std::string& path, std::unique_ptr<File> file) {
    return std::make_unique<JournaledFile>(std::move(file), journal_, journal_->Track(path));
  }

  std::unique_ptr<File> Writing(const std::string& path, OpenMode mode,
                                std::unique_ptr<File> file) {
    if (!LoadSnapshotCache::Keeps(path) || !journal_->recording()) return file;
    return snapshots_->Writing(path, mode, std::move(file));
  }
  // Runs `sync` of `path` and notes it for the journal's sync bookkeeping.
  template <typename Sync>
  Status Synced(const std::string& path, Sync sync) {
    const uint64_t counter = journal_->ChangeCounter();
    DARUMA_RETURN_IF_ERROR(sync());
    if (journal_->recording()) journal_->NoteSynced(path, counter);
    return Status::Ok();
  }
  Status Removed(const std::string& path, Status st) {
    if (st.ok() || st.IsNotFound()) {
      listing_->Removed(path);
    } else {
      listing_->Forget();
    }
    return st;
  }

  std::shared_ptr<LoadJournal> journal_;
  FileSystem* base_;
  std::shared_ptr<LoadDirListing> listing_;
  std::shared_ptr<LoadSnapshotCache> snapshots_;
};

}  // namespace

LoadTransaction::LoadTransaction(FileSystem* base, const std::string& partition_dir,
                                 FileSystem* data)
    : journal_(std::make_shared<LoadJournal>(base, partition_dir, data)),
      listing_(std::make_shared<LoadDirListing>(partition_dir)),
      snapshots_(std::make_shared<LoadSnapshotCache>()),
      fs_(std::make_unique<JournalingFileSystem>(journal_, listing_, snapshots_)) {}

LoadTransaction::~LoadTransaction() = default;

std::shared_ptr<LoadTransaction> LoadTransaction::Begin(FileSystem* base,
                                                        const std::string& partition_dir,
                                                        FileSystem* data) {
  return std::shared_ptr<LoadTransaction>(new LoadTransaction(base, partition_dir, data));
}

Result<bool> LoadTransaction::RollBackInterrupted(FileSystem* base,
                                                  const std::string& partition_dir) {
  return RollBackUndoDir(base, partition_dir);
}

std::string LoadTransaction::RolledBackWarning(const std::string& partition_dir, const char* file) {
  return fmt::format(
      "{}: an earlier load or repair of this partition was interrupted; its changes were undone "
      "first ({})",
      partition_dir, file);
}

Status LoadTransaction::RollBackInterrupted(FileSystem* base, const std::string& partition_dir,
                                            PartitionRecoveryReport* report) {
  DARUMA_ASSIGN_OR_RETURN(bool rolled, RollBackUndoDir(base, partition_dir));
  if (rolled) report->warnings.push_back(RolledBackWarning(partition_dir, kLoadJournalFileName));
  return Status::Ok();
}

Status LoadTransaction::RollBackInterruptedWithPack(FileSystem* base, const std::string& log_dir,
                                                    const std::string& partition_dir,
                                                    PartitionRecoveryReport* report) {
  DARUMA_ASSIGN_OR_RETURN(std::vector<UndoRecord> packed,
                          PackedUndoRecordsOf(base, log_dir, partition_dir));
  DARUMA_ASSIGN_OR_RETURN(bool rolled, RollBackUndoDir(base, partition_dir, packed));
  if (rolled) {
    report->warnings.push_back(RolledBackWarning(
        partition_dir, packed.empty() ? kLoadJournalFileName : kLoadUndoPackFileName));
  }
  return Status::Ok();
}

Status LoadTransaction::RollbackAfter(const Status& failure, PartitionRecoveryReport* report) {
  Status undone = Rollback();
  if (!undone.ok()) {
    Status both(failure.code(), fmt::format("{}; undoing the changes failed too: {}",
                                            failure.message(), undone.ToString()));
    // Refused permissions on both counts (a partition dir the broker's user
    // may not write) stay that partition's fault, not its log dir's.
    if (IsAccessDenied(failure) && IsAccessDenied(undone)) {
      return both.WithDetail(kAccessDeniedDetail);
    }
    return both;
  }
  report->quarantined.clear();
  report->not_kept.clear();
  report->deleted_files.clear();
  report->rebuilt_indexes.clear();
  report->truncated_bytes = 0;
  report->left_unchanged = true;
  return failure;
}

FileSystem* LoadTransaction::fs() {
  return fs_.get();
}
bool LoadTransaction::ChangedOnlyDerivedFiles(std::vector<std::string>* files) const {
  return journal_->ChangedOnlyDerivedFiles(files);
}

const std::string& LoadTransaction::partition_dir() const {
  return journal_->dir();
}

bool LoadTransaction::changed() const {
  return journal_->changed();
}

void LoadTransaction::StopRecordingIfUnchanged() {
  if (!journal_->changed()) {
    journal_->StopRecording();
    ForgetCaches();
  }
}

// Once the journal stops recording the caches are not consulted; a loaded
// Log keeps this object for its lifetime, so their memory goes now.
void LoadTransaction::ForgetCaches() {
  listing_->Forget();
  snapshots_->Forget("");
}

Status LoadTransaction::Presave(const std::vector<DirEntry>& listing,
                                const std::vector<std::string>& paths,
                                const std::vector<std::string>& removable,
                                std::shared_ptr<LoadUndoPackWriter> pack) {
  DARUMA_RETURN_IF_ERROR(journal_->Presave(listing, paths, removable, std::move(pack)));
  // Nothing changes the dir between the presave's listing and the load but
  // the undo log's own file (see load_dir_listing.h).
  listing_->Set(listing);
  return Status::Ok();
}
void LoadTransaction::StartFromListing(const std::vector<DirEntry>& listing) {
  listing_->Set(listing);
}
uint64_t LoadTransaction::packed_size() const {
  return journal_->packed_size();
}
bool LoadTransaction::HasFilesOfItsOwn() const {
  return journal_->HasFilesOfItsOwn();
}
Status LoadTransaction::Commit() {
  ForgetCaches();
  return journal_->Commit();
}
void LoadTransaction::Seal() {
  journal_->Seal();
  ForgetCaches();
}
Status LoadTransaction::FinishSealed() {
  return journal_->FinishSealed();
}
Status LoadTransaction::Rollback() {
  Status st = journal_->Rollback();
  ForgetCaches();
  return st;
}

}  // namespace daruma
