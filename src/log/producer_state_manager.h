// ProducerStateManager: the per-partition map from producer id to producer
// state, the partition's open and unreplicated transactions, and the
// `<offset>.snapshot` files of its directory (spec §9.7, §10.6, §11.1).
//
// Offsets it tracks:
//   * map end offset: the state reflects every batch below it. The caller
//     advances it (UpdateMapEndOffset) after each batch it applied, with or
//     without a producer id.
//   * last snapshot offset: TakeSnapshot writes `<map end>.snapshot` only when
//     the map end offset has moved past it.
//
// Applying one batch (recovery, replication, leader append after validation):
//   1. info = PrepareUpdate(pid, origin); completed = info.Append(batch)
//      (or ApplyBatch(batch), which does 1-2 with replication semantics);
//   2. Update(info);
//   3. if completed: lso = LastStableOffset(*completed), append the
//      transaction-index entry when it was aborted, then CompleteTxn(*completed);
//   4. UpdateMapEndOffset(batch.last_offset() + 1).
// LastStableOffset must be asked before CompleteTxn, because it looks for the
// earliest open transaction of *another* producer.
//
// Snapshots are written in Kafka's producer HashMap order, so the same state
// gives the bytes Kafka writes (producer_snapshot_order.h).
//
// Not thread-safe: the owning log serialises access. All file operations go
// through the FileSystem given at Open and fail with its kIoError statuses.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"
#include "log/producer_append_info.h"
#include "log/producer_snapshot_file.h"
#include "log/producer_state_entry.h"
#include "record/record_batch.h"

namespace daruma {

inline constexpr int64_t kDefaultProducerIdExpirationMs = 86400000;  // producer.id.expiration.ms

class ProducerStateManager {
 public:
  using SnapshotMap = std::map<int64_t, std::string>;  // offset -> path

  // Lists the snapshot files already in `dir`, or takes them from
  // `regular_files` (the names of the regular files in `dir`, just listed by
  // the caller). `partition` (e.g. "topic-0") only names the partition in
  // messages.
  static Result<std::unique_ptr<ProducerStateManager>> Open(
      std::string partition, std::string dir, FileSystem* fs,
      int64_t producer_id_expiration_ms = kDefaultProducerIdExpirationMs,
      const std::vector<std::string>* regular_files = nullptr);

  ProducerStateManager(const ProducerStateManager&) = delete;
  ProducerStateManager& operator=(const ProducerStateManager&) = delete;

  // ---- Applying batches -------------------------------------------------

  // A validator seeded with the producer's current state (or an empty one).
  ProducerAppendInfo PrepareUpdate(int64_t producer_id, AppendOrigin origin) const;
  // Commits what `info` recorded: the producer's new state and the
  // transactions it started. kInvalidArgument for producer id -1.
  Status Update(const ProducerAppendInfo& info);
  // Steps 1-2 above with replication semantics. A batch without a producer id
  // changes nothing. Errors: kInvalidTxnState (non-transactional data inside
  // an open transaction; aborts a log load), kInvalidRecord (bad marker).
  Result<std::optional<CompletedTxn>> ApplyBatch(const RecordBatchView& batch);

  // The cached batch a client batch duplicates (same epoch and sequence
  // range as one of the producer's last 5), checked before PrepareUpdate.
  std::optional<BatchMetadata> FindDuplicateBatch(const RecordBatchView& batch) const;

  // ---- Transactions and the last stable offset --------------------------

  // First offset of the earliest open transaction of another producer, else
  // completed.last_offset + 1: the LSO stored in a transaction-index entry.
  int64_t LastStableOffset(const CompletedTxn& completed) const;
  // Moves the transaction from "open" to "unreplicated". kInvalidArgument if
  // no open transaction starts at completed.first_offset.
  Status CompleteTxn(const CompletedTxn& completed);
  // Earliest first offset of an open or unreplicated transaction.
  std::optional<int64_t> FirstUnstableOffset() const;
  // Earliest first offset of an open transaction.
  std::optional<int64_t> FirstUndecidedOffset() const;
  // Forgets completed transactions whose marker is below `high_watermark`.
  void OnHighWatermarkUpdated(int64_t high_watermark);
  // Forgets completed transactions below the new log start, raises the map
  // end offset to it and re-derives the last snapshot offset.
  void OnLogStartOffsetIncremented(int64_t log_start_offset);

  // ---- Offsets and snapshots --------------------------------------------

  void UpdateMapEndOffset(int64_t offset) { map_end_offset_ = offset; }
  int64_t MapEndOffset() const { return map_end_offset_; }
  int64_t LastSnapshotOffsetTaken() const { return last_snap_offset_; }

  // Writes `<map end offset>.snapshot` if the map end offset is past the last
  // snapshot offset. Returns the path written, or nullopt if nothing was due.
  // `sync` = false defers the fsync (snapshots taken at roll, spec §11.4).
  Result<std::optional<std::string>> TakeSnapshot(bool sync = true);
  // Fsyncs every snapshot written with sync = false that still exists, then
  // the directory (Kafka's flushProducerStateSnapshot, run by the flush after
  // a roll). A log calls it before moving its recovery point and at close, so
  // a clean-shutdown marker never outlives the snapshots it vouches for.
  Status SyncPendingSnapshots();
  // Recovery rebuilds one segment after another (spec §10.4), and before
  // each one TruncateAndReload deletes every snapshot above that segment's
  // base; recovering the segments after it then writes most of them again,
  // byte for byte. With `retired` set, TruncateAndReload forgets such a
  // snapshot (above its end offset) but leaves the file, noting it in
  // *retired (offset -> path), and TakeSnapshot keeps a retired file whose
  // bytes are what it would write instead of writing it again (one delete,
  // create and write fewer each, and none of the file-system work around
  // them). The owner of *retired, shared by the managers of one load,
  // deletes what is still retired before anything else looks at snapshots
  // (DeleteRetiredSnapshots); until then the files are not the state.
  void set_retired_snapshots(SnapshotMap* retired) { retired_ = retired; }
  // Called with a snapshot's path and the reason just before a corrupt
  // snapshot found while loading is deleted (spec §10.6); an error from it
  // keeps the file and is returned. Recovery sets it to quarantine a copy.
  using CorruptSnapshotHook = std::function<Status(const std::string& path, const Status& why)>;
  void set_corrupt_snapshot_hook(CorruptSnapshotHook hook) {
    corrupt_snapshot_hook_ = std::move(hook);
  }
  // Called with a snapshot file's path just before the manager deletes it or
  // renames it for deletion, whatever the reason; an error from it keeps the
  // file and is returned. Recovery sets it to quarantine a copy of a corrupt
  // one, so that only the snapshots that go are read.
  using RemovalHook = std::function<Status(const std::string& path)>;
  void set_removal_hook(RemovalHook hook) { removal_hook_ = std::move(hook); }

  // Spec §10.6 "snapshot selection": deletes snapshots above `log_end_offset`
  // or at/below `log_start_offset`; then, if the map end offset differs from
  // `log_end_offset`, clears all state and loads the latest snapshot that
  // reads cleanly (deleting corrupt ones on the way; expired producers are
  // skipped), or starts empty at `log_start_offset` when none is left.
  Status TruncateAndReload(int64_t log_start_offset, int64_t log_end_offset, int64_t now_ms);
  // Clears all state, deletes every snapshot and restarts at `offset`.
  Status TruncateFullyAndStartAt(int64_t offset);

  std::optional<int64_t> LatestSnapshotOffset() const;
  std::optional<int64_t> OldestSnapshotOffset() const;
  std::vector<int64_t> SnapshotOffsets() const;
  std::string SnapshotPath(int64_t offset) const;
  // Deletes snapshots with offsets below `offset`.
  Status DeleteSnapshotsBefore(int64_t offset);
  // Forgets the snapshot at `offset` and renames it to `.snapshot.deleted`
  // (physically deleted later, spec §9.7). Returns the new path, or nullopt if
  // there was no such snapshot (or its file was already gone).
  Result<std::optional<std::string>> RemoveAndMarkSnapshotForDeletion(int64_t offset);
  // Spec §10.3 pass 6: re-lists the directory (or takes `regular_files`, as
  // for Open, when the caller knows no snapshot changed since its listing),
  // keeps snapshots at segment bases plus the largest other one if it is
  // above every segment base, and deletes the rest.
  Status RemoveStraySnapshots(const std::vector<int64_t>& segment_base_offsets,
                              const std::vector<std::string>* regular_files = nullptr);

  // ---- Producers ---------------------------------------------------------

  // Drops producers with no open transaction whose last timestamp is at least
  // producer.id.expiration.ms before `now_ms`.
  void RemoveExpiredProducers(int64_t now_ms);
  const std::map<int64_t, ProducerStateEntry>& ActiveProducers() const { return producers_; }
  const ProducerStateEntry* LastEntry(int64_t producer_id) const;
  // Inserts a producer as read from a snapshot (and its open transaction).
  void LoadProducerEntry(const ProducerStateEntry& entry);
  // No producers and no unreplicated transactions.
  bool IsEmpty() const { return producers_.empty() && unreplicated_txns_.empty(); }
  // The entries a snapshot taken now would hold, in Kafka's order.
  std::vector<ProducerSnapshotEntry> SnapshotEntries() const;

  const std::map<int64_t, TxnMetadata>& OngoingTxns() const { return ongoing_txns_; }
  // The completed transactions FirstUnstableOffset can still return (see
  // unreplicated_txns_): a subset of Kafka's unreplicatedTxns, not all of it.
  struct UnreplicatedTxn {
    int64_t first_offset = 0;
    int64_t last_offset = 0;  // the marker's offset
  };
  const std::deque<UnreplicatedTxn>& UnreplicatedTxnsThatCanBeFirst() const {
    return unreplicated_txns_;
  }

 private:
  ProducerStateManager(std::string partition, std::string dir, FileSystem* fs,
                       int64_t producer_id_expiration_ms);

  // The snapshot files in dir_: among `regular_files` (names the caller just
  // listed) when given, else from a listing of the dir.
  Result<SnapshotMap> ListSnapshots(const std::vector<std::string>* regular_files = nullptr) const;
  SnapshotMap SnapshotsAmong(const std::vector<std::string>& regular_files) const;
  Status RemoveAndDeleteSnapshot(int64_t offset);
  Status DeleteFileIfExists(const std::string& path);
  Result<bool> KeepRetiredSnapshot(const std::string& path, bool sync);
  bool IsExpired(const ProducerStateEntry& entry, int64_t now_ms) const;
  void PutProducer(const ProducerStateEntry& entry);
  void ClearProducerState();
  Status LoadFromSnapshot(int64_t log_start_offset, int64_t now_ms);
  void RemoveUnreplicatedTransactions(int64_t offset);

  std::string partition_;
  std::string dir_;
  FileSystem* fs_;
  int64_t producer_id_expiration_ms_;

  std::map<int64_t, ProducerStateEntry> producers_;
  // Order of insertion into Kafka's HashMap, and its peak size (its capacity
  // never shrinks), to reproduce Kafka's snapshot entry order.
  std::map<int64_t, uint64_t> insertion_seq_;
  uint64_t next_insertion_seq_ = 0;
  size_t peak_producer_count_ = 0;

  std::map<int64_t, TxnMetadata> ongoing_txns_;  // by first offset
  // Kafka keeps every completed transaction until the high watermark passes
  // its marker (unreplicatedTxns), and reads it only for the earliest first
  // offset (FirstUnstableOffset) and for emptiness (IsEmpty). A recovery
  // from offset 0 completes every transaction of the log before the high
  // watermark is first set, so Kafka's map held one entry per transaction
  // ever written: 1.7 M entries and 150 MB for 1 GiB of 100-byte
  // transactional batches. Only these are kept instead, as a sliding-window
  // minimum:
  //  * in completion order, which is the markers' offset order, so
  //    last_offset increases from front to back, and forgetting those below
  //    a high watermark or log start pops a prefix from the front;
  //  * first_offset increases from front to back too: a transaction that
  //    completes later with an earlier or equal first offset outlives every
  //    entry behind which it is pushed, so those can never be the minimum
  //    again and are dropped.
  // Hence front() is the earliest first offset among Kafka's entries, and the
  // deque is empty exactly when Kafka's map is (the last completed
  // transaction is always kept, and it is the last to be forgotten).
  std::deque<UnreplicatedTxn> unreplicated_txns_;
  SnapshotMap snapshots_;
  int64_t map_end_offset_ = 0;
  int64_t last_snap_offset_ = 0;
  // Snapshots written without fsync, oldest first (see SyncPendingSnapshots).
  std::vector<std::string> unsynced_snapshots_;
  CorruptSnapshotHook corrupt_snapshot_hook_;
  RemovalHook removal_hook_;
  SnapshotMap* retired_ = nullptr;  // see set_retired_snapshots
};

// Deletes every file in *retired (see set_retired_snapshots) and empties it.
// `before_removal` (may be null): as ProducerStateManager::set_removal_hook.
Status DeleteRetiredSnapshots(FileSystem* fs, ProducerStateManager::SnapshotMap* retired,
                              const ProducerStateManager::RemovalHook& before_removal = nullptr);

}  // namespace daruma
