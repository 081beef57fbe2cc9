#include "recovery/producer_snapshot_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <iterator>

namespace daruma {
namespace {

std::string Describe(const ProducerSnapshotEntry& e) {
  return fmt::format(
      "(epoch {}, last sequence {}, last offset {}, offset delta {}, timestamp {}, coordinator "
      "epoch {}, open transaction from {})",
      e.epoch, e.last_sequence, e.last_offset, e.offset_delta, e.timestamp, e.coordinator_epoch,
      e.current_txn_first_offset);
}

}  // namespace

ProducerSnapshotCheck::ProducerSnapshotCheck(FileSystem* fs, std::string partition_dir,
                                             std::string partition_name,
                                             std::map<int64_t, std::string> snapshot_files,
                                             int64_t producer_id_expiration_ms, bool drop_cache,
                                             std::optional<int64_t> rebuilt_from)
    : fs_(fs),
      overlay_(fs, OverlayOptions{drop_cache}),
      pending_(std::move(snapshot_files)),
      expiration_ms_(producer_id_expiration_ms),
      drop_cache_(drop_cache),
      rebuilt_from_(rebuilt_from) {
  if (rebuilt_from_) pending_.erase(pending_.upper_bound(*rebuilt_from_), pending_.end());
  if (pending_.empty()) return;  // nothing to compare: no replay needed
  auto psm = ProducerStateManager::Open(std::move(partition_name), std::move(partition_dir),
                                        &overlay_, expiration_ms_);
  if (psm.ok()) {
    replay_ = std::move(*psm);
  } else {
    stopped_ = true;
  }
}

void ProducerSnapshotCheck::OnBatch(const LogEntry& entry) {
  // Legacy entries hold offsets too: a gap is only what no entry holds.
  const int64_t first = entry.is_v2() ? entry.batch().base_offset() : entry.prefix_offset();
  if (next_offset_ && first > *next_offset_) gaps_.emplace_back(*next_offset_, first);
  next_offset_ = std::max(next_offset_.value_or(0), entry.last_offset() + 1);
  if (!entry.is_v2()) return;
  RecordBatchView batch = entry.batch();
  saw_producer_batches_ = saw_producer_batches_ || batch.has_producer_id();
  if (batch.has_producer_id() &&
      int64_t(batch.records_count()) < batch.last_offset() - batch.base_offset() + 1) {
    thinned_batches_.insert(batch.last_offset());
  }
  if (stopped_ || pending_.empty()) return;
  if (!first_offset_) {
    first_offset_ = batch.base_offset();
    // Snapshots below the log's first batch are stale; recovery deletes them.
    pending_.erase(pending_.begin(), pending_.lower_bound(*first_offset_));
  }
  CompareUpTo(batch.base_offset());
  if (!batch.has_producer_id()) return;
  auto completed = replay_->ApplyBatch(batch);
  if (!completed.ok()) {
    stopped_ = true;  // recovery fails on this batch too; the plan reports it
    return;
  }
  if (*completed && !replay_->CompleteTxn(**completed).ok()) stopped_ = true;
}

std::vector<SnapshotProblem> ProducerSnapshotCheck::Finish(int64_t end_offset) {
  if (!stopped_) CompareUpTo(end_offset);
  return std::move(problems_);
}

void ProducerSnapshotCheck::CompareUpTo(int64_t offset) {
  while (!pending_.empty() && pending_.begin()->first <= offset) {
    auto it = pending_.begin();
    Compare(it->first, it->second);
    pending_.erase(it);
  }
}

bool ProducerSnapshotCheck::InGap(int64_t offset) const {
  auto it = std::upper_bound(gaps_.begin(), gaps_.end(), offset,
                             [](int64_t o, const auto& gap) { return o < gap.first; });
  return it != gaps_.begin() && offset < std::prev(it)->second;
}

std::optional<std::string> ProducerSnapshotCheck::Difference(const ProducerSnapshotEntry& replayed,
                                                             const ProducerSnapshotEntry& stored,
                                                             int64_t snapshot_offset) const {
  // The file saw a later batch of the producer, which was cleaned away.
  if (stored.last_offset > replayed.last_offset && stored.last_offset < snapshot_offset &&
      InGap(stored.last_offset)) {
    return std::nullopt;
  }
  ProducerSnapshotEntry expected = replayed;
  // The cleaner removed records from this batch after the file was written
  // and gave it the largest timestamp of those it kept (Kafka's too).
  if (stored.last_offset == replayed.last_offset && stored.timestamp > replayed.timestamp &&
      thinned_batches_.count(replayed.last_offset) > 0) {
    expected.timestamp = stored.timestamp;
  }
  const bool partial = first_offset_.value_or(0) > 0;
  if (partial && replayed.coordinator_epoch == -1) {
    expected.coordinator_epoch = stored.coordinator_epoch;  // its marker may be gone
  }
  if (expected == stored) return std::nullopt;
  return fmt::format("expected {} from a replay of the log, found {}", Describe(expected),
                     Describe(stored));
}

Result<std::vector<ProducerSnapshotEntry>> ProducerSnapshotCheck::Read(const std::string& path) {
  DARUMA_ASSIGN_OR_RETURN(auto file, fs_->Open(path, OpenMode::kRead));
  auto entries = ReadProducerSnapshot(fs_, path);
  if (drop_cache_) {
    auto size = file->Size();
    if (size.ok()) file->DropCache(0, *size);
  }
  return entries;
}

void ProducerSnapshotCheck::Compare(int64_t offset, const std::string& path) {
  Result<std::vector<ProducerSnapshotEntry>> stored = Read(path);
  if (!stored.ok()) {
    if (rebuilt_from_ && offset == *rebuilt_from_) return;
    problems_.push_back(
        {path, -1, offset, "unreadable producer snapshot: " + stored.status().message()});
    return;
  }
  std::map<int64_t, std::pair<size_t, ProducerSnapshotEntry>> by_id;
  for (size_t i = 0; i < stored->size(); ++i) by_id[(*stored)[i].producer_id] = {i, (*stored)[i]};
  auto mtime = fs_->ModifiedTimeMs(path);
  const int64_t written_ms = mtime.ok() ? *mtime : INT64_MAX;
  auto position = [](size_t i) {
    return int64_t(producer_snapshot_layout::kEntriesOffset +
                   i * producer_snapshot_layout::kEntrySize);
  };
  for (const ProducerSnapshotEntry& r : replay_->SnapshotEntries()) {
    auto it = by_id.find(r.producer_id);
    if (it == by_id.end()) {
      const bool may_have_expired =
          r.current_txn_first_offset < 0 && r.timestamp + expiration_ms_ < written_ms;
      if (may_have_expired) continue;
      problems_.push_back(
          {path, -1, offset,
           fmt::format("producer id {}: expected {} from a replay of the log up to offset {}, "
                       "found no entry",
                       r.producer_id, Describe(r), offset)});
      return;
    }
    if (auto diff = Difference(r, it->second.second, offset)) {
      problems_.push_back({path, position(it->second.first), offset,
                           fmt::format("producer id {}: {}", r.producer_id, *diff)});
      return;
    }
    by_id.erase(it);
  }
  if (first_offset_.value_or(0) > 0) return;
  // Producers whose batches below the snapshot were all cleaned away.
  std::erase_if(by_id, [&](const auto& e) {
    return e.second.second.last_offset < offset && InGap(e.second.second.last_offset);
  });
  if (by_id.empty()) return;
  const auto& [pid, entry] = *by_id.begin();
  problems_.push_back({path, position(entry.first), offset,
                       fmt::format("producer id {}: expected no entry (no batch of it below offset "
                                   "{}), found {}",
                                   pid, offset, Describe(entry.second))});
}

}  // namespace daruma
