#include "log/producer_state_manager.h"

#include <algorithm>
#include <utility>

#include "log/log_file_names.h"
#include "log/producer_snapshot_order.h"

namespace daruma {

Result<std::unique_ptr<ProducerStateManager>> ProducerStateManager::Open(
    std::string partition, std::string dir, FileSystem* fs, int64_t producer_id_expiration_ms,
    const std::vector<std::string>* regular_files) {
  std::unique_ptr<ProducerStateManager> manager(new ProducerStateManager(
      std::move(partition), std::move(dir), fs, producer_id_expiration_ms));
  DARUMA_ASSIGN_OR_RETURN(manager->snapshots_, manager->ListSnapshots(regular_files));
  return manager;
}

ProducerStateManager::ProducerStateManager(std::string partition, std::string dir, FileSystem* fs,
                                           int64_t producer_id_expiration_ms)
    : partition_(std::move(partition)),
      dir_(std::move(dir)),
      fs_(fs),
      producer_id_expiration_ms_(producer_id_expiration_ms) {}

// ---- Applying batches ------------------------------------------------------

ProducerAppendInfo ProducerStateManager::PrepareUpdate(int64_t producer_id,
                                                       AppendOrigin origin) const {
  const ProducerStateEntry* entry = LastEntry(producer_id);
  return ProducerAppendInfo(partition_, producer_id,
                            entry ? *entry : ProducerStateEntry::Empty(producer_id), origin);
}

Status ProducerStateManager::Update(const ProducerAppendInfo& info) {
  if (info.producer_id() == kNoProducerId) {
    return Status::InvalidArgument("producer state of " + partition_ +
                                   ": update with producer id -1");
  }
  PutProducer(info.updated_entry());
  for (const TxnMetadata& txn : info.started_transactions()) {
    ongoing_txns_[txn.first_offset] = txn;
  }
  return Status::Ok();
}

Result<std::optional<CompletedTxn>> ProducerStateManager::ApplyBatch(const RecordBatchView& batch) {
  if (!batch.has_producer_id()) return std::optional<CompletedTxn>();
  ProducerAppendInfo info = PrepareUpdate(batch.producer_id(), AppendOrigin::kReplication);
  DARUMA_ASSIGN_OR_RETURN(std::optional<CompletedTxn> completed, info.Append(batch));
  DARUMA_RETURN_IF_ERROR(Update(info));
  return completed;
}

std::optional<BatchMetadata> ProducerStateManager::FindDuplicateBatch(
    const RecordBatchView& batch) const {
  if (!batch.has_producer_id()) return std::nullopt;
  const ProducerStateEntry* entry = LastEntry(batch.producer_id());
  if (entry == nullptr) return std::nullopt;
  return entry->FindDuplicateBatch(batch.producer_epoch(), batch.base_sequence(),
                                   batch.last_sequence());
}

// ---- Transactions ------------------------------------------------------------

int64_t ProducerStateManager::LastStableOffset(const CompletedTxn& completed) const {
  for (const auto& [first_offset, txn] : ongoing_txns_) {
    if (txn.producer_id != completed.producer_id) return first_offset;
  }
  return completed.last_offset + 1;
}

Status ProducerStateManager::CompleteTxn(const CompletedTxn& completed) {
  auto it = ongoing_txns_.find(completed.first_offset);
  if (it == ongoing_txns_.end()) {
    return Status::InvalidArgument(
        "producer state of " + partition_ + ": completing transaction of producer " +
        std::to_string(completed.producer_id) + " from offset " +
        std::to_string(completed.first_offset) + ", which was not started");
  }
  ongoing_txns_.erase(it);
  // Markers come in offset order, so completions do. Should a caller ever
  // complete out of order, the entry is kept as long as the one before it:
  // the front-pop stays a prefix, at worst holding an LSO back longer.
  int64_t last_offset = completed.last_offset;
  if (!unreplicated_txns_.empty()) {
    last_offset = std::max(last_offset, unreplicated_txns_.back().last_offset);
  }
  while (!unreplicated_txns_.empty() &&
         unreplicated_txns_.back().first_offset >= completed.first_offset) {
    unreplicated_txns_.pop_back();
  }
  unreplicated_txns_.push_back({completed.first_offset, last_offset});
  return Status::Ok();
}

std::optional<int64_t> ProducerStateManager::FirstUnstableOffset() const {
  std::optional<int64_t> result = FirstUndecidedOffset();
  if (!unreplicated_txns_.empty()) {
    const int64_t unreplicated = unreplicated_txns_.front().first_offset;
    if (!result || unreplicated <= *result) result = unreplicated;
  }
  return result;
}

std::optional<int64_t> ProducerStateManager::FirstUndecidedOffset() const {
  if (ongoing_txns_.empty()) return std::nullopt;
  return ongoing_txns_.begin()->first;
}

void ProducerStateManager::OnHighWatermarkUpdated(int64_t high_watermark) {
  RemoveUnreplicatedTransactions(high_watermark);
}

void ProducerStateManager::OnLogStartOffsetIncremented(int64_t log_start_offset) {
  RemoveUnreplicatedTransactions(log_start_offset);
  map_end_offset_ = std::max(map_end_offset_, log_start_offset);
  last_snap_offset_ = LatestSnapshotOffset().value_or(log_start_offset);
}

void ProducerStateManager::RemoveUnreplicatedTransactions(int64_t offset) {
  while (!unreplicated_txns_.empty() && unreplicated_txns_.front().last_offset < offset) {
    unreplicated_txns_.pop_front();
  }
}

// ---- Snapshots ---------------------------------------------------------------

std::string ProducerStateManager::SnapshotPath(int64_t offset) const {
  return ProducerSnapshotFileName(dir_, offset);
}

Result<ProducerStateManager::SnapshotMap> ProducerStateManager::ListSnapshots(
    const std::vector<std::string>* regular_files) const {
  if (regular_files != nullptr) return SnapshotsAmong(*regular_files);
  DARUMA_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs_->ListDir(dir_));
  std::vector<std::string> listed;
  for (const DirEntry& entry : entries) {
    if (entry.is_regular) listed.push_back(entry.name);
  }
  return SnapshotsAmong(listed);
}

ProducerStateManager::SnapshotMap ProducerStateManager::SnapshotsAmong(
    const std::vector<std::string>& regular_files) const {
  SnapshotMap snapshots;
  for (const std::string& name : regular_files) {
    if (!HasSuffix(name, kProducerSnapshotFileSuffix)) continue;
    // Kafka fails on a non-numeric "<name>.snapshot"; Daruma ignores it, as
    // it cannot be one of the files this manager writes.
    auto offset = OffsetFromFileName(name);
    if (offset.ok()) snapshots[*offset] = JoinPath(dir_, name);
  }
  return snapshots;
}

namespace {

// Removes `path`; a file already gone is not an error.
Status RemoveUnlessMissing(FileSystem* fs, const std::string& path) {
  Status st = fs->Remove(path);
  return st.IsNotFound() ? Status::Ok() : st;
}

}  // namespace

Status ProducerStateManager::DeleteFileIfExists(const std::string& path) {
  if (removal_hook_) DARUMA_RETURN_IF_ERROR(removal_hook_(path));
  return RemoveUnlessMissing(fs_, path);
}

Status ProducerStateManager::RemoveAndDeleteSnapshot(int64_t offset) {
  auto it = snapshots_.find(offset);
  if (it == snapshots_.end()) return Status::Ok();
  const std::string path = it->second;
  snapshots_.erase(it);
  return DeleteFileIfExists(path);
}

Result<std::optional<std::string>> ProducerStateManager::TakeSnapshot(bool sync) {
  if (map_end_offset_ <= last_snap_offset_) return std::optional<std::string>();
  const std::string path = SnapshotPath(map_end_offset_);
  DARUMA_ASSIGN_OR_RETURN(bool kept, KeepRetiredSnapshot(path, sync));
  if (!kept) DARUMA_RETURN_IF_ERROR(WriteProducerSnapshot(fs_, path, SnapshotEntries(), sync));
  if (!sync) unsynced_snapshots_.push_back(path);
  snapshots_[map_end_offset_] = path;
  last_snap_offset_ = map_end_offset_;
  return std::optional<std::string>(path);
}

// A retired file at the map end offset is kept when it holds exactly the
// bytes TakeSnapshot would write (and, with `sync`, is made durable like a
// written one); otherwise it is deleted, as TruncateAndReload would have
// done, and the snapshot is written anew.
Result<bool> ProducerStateManager::KeepRetiredSnapshot(const std::string& path, bool sync) {
  if (retired_ == nullptr) return false;
  auto it = retired_->find(map_end_offset_);
  if (it == retired_->end()) return false;
  retired_->erase(it);
  auto old = fs_->ReadFile(path);
  if (old.ok() && *old == EncodeProducerSnapshot(SnapshotEntries())) {
    if (!sync) return true;
    DARUMA_RETURN_IF_ERROR(fs_->SyncFile(path));
    DARUMA_RETURN_IF_ERROR(fs_->SyncDir(dir_));
    return true;
  }
  if (!old.ok() && !old.status().IsNotFound()) return old.status();
  DARUMA_RETURN_IF_ERROR(DeleteFileIfExists(path));
  return false;
}

Status DeleteRetiredSnapshots(FileSystem* fs, ProducerStateManager::SnapshotMap* retired,
                              const ProducerStateManager::RemovalHook& before_removal) {
  for (const auto& [offset, path] : *retired) {
    if (before_removal) DARUMA_RETURN_IF_ERROR(before_removal(path));
    DARUMA_RETURN_IF_ERROR(RemoveUnlessMissing(fs, path));
  }
  retired->clear();
  return Status::Ok();
}

Status ProducerStateManager::SyncPendingSnapshots() {
  if (unsynced_snapshots_.empty()) return Status::Ok();
  for (const std::string& path : unsynced_snapshots_) {
    // A snapshot deleted since (truncation, retention) needs nothing.
    Status synced = fs_->SyncFile(path);
    if (!synced.ok() && !synced.IsNotFound()) return synced;
  }
  DARUMA_RETURN_IF_ERROR(fs_->SyncDir(dir_));
  unsynced_snapshots_.clear();
  return Status::Ok();
}

std::vector<ProducerSnapshotEntry> ProducerStateManager::SnapshotEntries() const {
  std::vector<InsertedKey> keys;
  keys.reserve(producers_.size());
  for (const auto& [pid, entry] : producers_) keys.push_back({pid, insertion_seq_.at(pid)});
  std::vector<ProducerSnapshotEntry> entries;
  entries.reserve(keys.size());
  for (int64_t pid : JavaHashMapIterationOrder(keys, JavaHashMapCapacity(peak_producer_count_))) {
    entries.push_back(ToSnapshotEntry(producers_.at(pid)));
  }
  return entries;
}

Status ProducerStateManager::TruncateAndReload(int64_t log_start_offset, int64_t log_end_offset,
                                               int64_t now_ms) {
  std::vector<int64_t> out_of_range;
  for (const auto& [offset, path] : snapshots_) {
    if (offset > log_end_offset || offset <= log_start_offset) out_of_range.push_back(offset);
  }
  for (int64_t offset : out_of_range) {
    if (retired_ != nullptr && offset > log_end_offset) {
      retired_->emplace(offset, snapshots_.at(offset));
      snapshots_.erase(offset);
      continue;
    }
    DARUMA_RETURN_IF_ERROR(RemoveAndDeleteSnapshot(offset));
  }

  if (log_end_offset == map_end_offset_) {
    OnLogStartOffsetIncremented(log_start_offset);
    return Status::Ok();
  }
  // The end offset is at or below the high watermark, so dropping the
  // unreplicated transactions together with everything else is safe.
  ClearProducerState();
  return LoadFromSnapshot(log_start_offset, now_ms);
}

Status ProducerStateManager::LoadFromSnapshot(int64_t log_start_offset, int64_t now_ms) {
  while (!snapshots_.empty()) {
    const auto [offset, path] = *snapshots_.rbegin();
    auto entries = ReadProducerSnapshot(fs_, path);
    if (entries.ok()) {
      for (const ProducerSnapshotEntry& stored : *entries) {
        ProducerStateEntry entry = FromSnapshotEntry(stored);
        if (!IsExpired(entry, now_ms)) LoadProducerEntry(entry);
      }
      last_snap_offset_ = offset;
      map_end_offset_ = offset;
      return Status::Ok();
    }
    // Only a corrupt snapshot is skipped; an I/O error must reach the caller.
    if (!entries.status().IsCorruption()) return entries.status();
    if (corrupt_snapshot_hook_)
      DARUMA_RETURN_IF_ERROR(corrupt_snapshot_hook_(path, entries.status()));
    DARUMA_RETURN_IF_ERROR(RemoveAndDeleteSnapshot(offset));
  }
  last_snap_offset_ = log_start_offset;
  map_end_offset_ = log_start_offset;
  return Status::Ok();
}

Status ProducerStateManager::TruncateFullyAndStartAt(int64_t offset) {
  ClearProducerState();
  while (!snapshots_.empty()) {
    DARUMA_RETURN_IF_ERROR(RemoveAndDeleteSnapshot(snapshots_.begin()->first));
  }
  last_snap_offset_ = 0;
  map_end_offset_ = offset;
  return Status::Ok();
}

std::optional<int64_t> ProducerStateManager::LatestSnapshotOffset() const {
  if (snapshots_.empty()) return std::nullopt;
  return snapshots_.rbegin()->first;
}

std::optional<int64_t> ProducerStateManager::OldestSnapshotOffset() const {
  if (snapshots_.empty()) return std::nullopt;
  return snapshots_.begin()->first;
}

std::vector<int64_t> ProducerStateManager::SnapshotOffsets() const {
  std::vector<int64_t> offsets;
  for (const auto& [offset, path] : snapshots_) offsets.push_back(offset);
  return offsets;
}

Status ProducerStateManager::DeleteSnapshotsBefore(int64_t offset) {
  while (!snapshots_.empty() && snapshots_.begin()->first < offset) {
    DARUMA_RETURN_IF_ERROR(RemoveAndDeleteSnapshot(snapshots_.begin()->first));
  }
  return Status::Ok();
}

Result<std::optional<std::string>> ProducerStateManager::RemoveAndMarkSnapshotForDeletion(
    int64_t offset) {
  auto it = snapshots_.find(offset);
  if (it == snapshots_.end()) return std::optional<std::string>();
  const std::string path = it->second;
  if (removal_hook_) DARUMA_RETURN_IF_ERROR(removal_hook_(path));
  snapshots_.erase(it);
  const std::string deleted = path + ".deleted";
  Status st = fs_->Rename(path, deleted);
  // A file already gone was deleted by an earlier (temporary) manager.
  if (st.IsNotFound()) return std::optional<std::string>();
  DARUMA_RETURN_IF_ERROR(st);
  return std::optional<std::string>(deleted);
}

Status ProducerStateManager::RemoveStraySnapshots(const std::vector<int64_t>& segment_base_offsets,
                                                  const std::vector<std::string>* regular_files) {
  DARUMA_ASSIGN_OR_RETURN(SnapshotMap snapshots, ListSnapshots(regular_files));
  std::vector<int64_t> bases = segment_base_offsets;
  std::sort(bases.begin(), bases.end());
  auto is_base = [&bases](int64_t offset) {
    return std::binary_search(bases.begin(), bases.end(), offset);
  };
  std::optional<int64_t> latest_stray;
  for (const auto& [offset, path] : snapshots) {
    if (is_base(offset)) continue;
    if (latest_stray) DARUMA_RETURN_IF_ERROR(DeleteFileIfExists(snapshots.at(*latest_stray)));
    latest_stray = offset;
  }
  // Offsets ascend, so only the last stray survived the loop; it stays only
  // if it lies above every segment base (the LEO snapshot of a clean shutdown).
  const bool keep_latest = latest_stray && (bases.empty() || *latest_stray >= bases.back());
  if (latest_stray && !keep_latest) {
    DARUMA_RETURN_IF_ERROR(DeleteFileIfExists(snapshots.at(*latest_stray)));
  }
  for (auto it = snapshots.begin(); it != snapshots.end();) {
    const bool kept = is_base(it->first) || (keep_latest && it->first == *latest_stray);
    it = kept ? std::next(it) : snapshots.erase(it);
  }
  snapshots_ = std::move(snapshots);
  return Status::Ok();
}

// ---- Producers -------------------------------------------------------------

bool ProducerStateManager::IsExpired(const ProducerStateEntry& entry, int64_t now_ms) const {
  return !entry.current_txn_first_offset() &&
         now_ms - entry.last_timestamp() >= producer_id_expiration_ms_;
}

void ProducerStateManager::RemoveExpiredProducers(int64_t now_ms) {
  for (auto it = producers_.begin(); it != producers_.end();) {
    if (IsExpired(it->second, now_ms)) {
      insertion_seq_.erase(it->first);
      it = producers_.erase(it);
    } else {
      ++it;
    }
  }
}

const ProducerStateEntry* ProducerStateManager::LastEntry(int64_t producer_id) const {
  auto it = producers_.find(producer_id);
  return it == producers_.end() ? nullptr : &it->second;
}

void ProducerStateManager::LoadProducerEntry(const ProducerStateEntry& entry) {
  PutProducer(entry);
  if (auto first = entry.current_txn_first_offset()) {
    ongoing_txns_[*first] = TxnMetadata{entry.producer_id(), *first, std::nullopt};
  }
}

void ProducerStateManager::PutProducer(const ProducerStateEntry& entry) {
  const int64_t pid = entry.producer_id();
  auto [it, inserted] = producers_.insert_or_assign(pid, entry);
  if (inserted) {
    insertion_seq_[pid] = next_insertion_seq_++;
    peak_producer_count_ = std::max(peak_producer_count_, producers_.size());
  }
}

void ProducerStateManager::ClearProducerState() {
  producers_.clear();
  insertion_seq_.clear();
  ongoing_txns_.clear();
  unreplicated_txns_.clear();
}

}  // namespace daruma
