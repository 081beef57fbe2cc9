// The deterministic workload of the crash matrix, and the recover-and-check
// step run on every crash image. Header-only so the crash tests in this
// directory share it without a library (tests link per layer).
//
// Workload (all I/O through the given FileSystem; stops at the first failed
// step, as a broker would take the dir offline):
//  A. Two fresh partitions created with Log::CreateEmpty in one log dir:
//     `orders-0` gets plain and idempotent batches (with idempotent
//     retries), `payments-1` transactional batches closed by COMMIT/ABORT
//     markers plus plain ones; small segments roll often, explicit rolls,
//     periodic FlushAll; then Log::Close (no checkpoints: unclean dir).
//  B. LogManager::Startup (unclean recovery), more rounds, Shutdown (clean).
//  C. LogManager::Startup (clean), more rounds, FlushAll; then the manager
//     is dropped without Shutdown.
// With `background_steps` (the crash matrix; off for the corruption matrix,
// which expects every record served), a third, compacted partition and
// phase C runs with kManual jobs and the log cleaner: more rounds, then the
// background steps, each between more rounds:
//       retention: DeleteRecords on `orders-0` (MaybeIncrementLogStartOffset
//         to a third of its high watermark), LogManager::RunRetention
//         (segments and snapshots renamed to `.deleted`), the
//         log-start-offset checkpoint;
//       compaction: the clock passes the cleaner backoff and every due job
//         runs (the cleaner compacts `profiles-2`: `.cleaned` -> `.swap` ->
//         swapped in, old files `.deleted`, cleaner-offset-checkpoint; the
//         retention and checkpoint jobs);
//       delayed delete: the clock passes file.delete.delay.ms and the
//         "delete-file" jobs remove the `.deleted` files;
//     then FlushAll; then the manager is dropped without Shutdown.
// `profiles-2` (created in A) is compacted: cleanup.policy=compact set with
// LogManager::SetTopicConfig in B (so it is also persisted in
// daruma-topic-configs.json and read back by every later start). Each of its
// batches carries a record with a key used once (so compaction never empties
// a batch and the log stays contiguous for ScanLog) and 1-2 records with one
// of 4 shared keys.
// Acknowledgement: a record is acknowledged once a later Flush/FlushAll or a
// clean Shutdown returned OK (the model keeps `acked_end` per partition).
// The high watermark follows the acknowledged end (one node: every flushed
// record is committed), so retention and the cleaner only act on acked data.
// What may legitimately disappear: records of `orders-0` below the log start
// offset DeleteRecords asked for (`deletable_below`), and in `profiles-2` a
// record whose key has a later acknowledged record (compaction).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "common/clock.h"
#include "common/file_system.h"
#include "log/log.h"
#include "log/offset_checkpoint_file.h"
#include "record/record_batch_builder.h"
#include "recovery/log_invariants.h"
#include "recovery/log_manager.h"
#include "support/mem_file_system.h"

namespace daruma::testing {

inline constexpr int64_t kWorkloadNowMs = 1700000000000;
inline const TopicPartition kPlainTp{"orders", 0};
inline const TopicPartition kTxnTp{"payments", 1};
inline const TopicPartition kCompactTp{"profiles", 2};

struct PartitionModel {
  std::map<int64_t, std::optional<std::string>> written;  // value; nullopt for markers
  int64_t acked_end = 0;                                  // every offset below was acknowledged
  int64_t deletable_below = 0;          // DeleteRecords asked for this log start offset
  std::map<int64_t, std::string> keys;  // compacted partitions: the key at each offset
};

// Whether the acknowledged record at `offset` may be missing after recovery
// (see the top of this file).
inline bool MayBeGone(const PartitionModel& part, int64_t offset) {
  if (offset < part.deletable_below) return true;
  auto key = part.keys.find(offset);
  if (key == part.keys.end()) return false;
  for (auto it = part.keys.upper_bound(offset); it != part.keys.end(); ++it) {
    if (it->first >= part.acked_end) break;
    if (it->second == key->second) return true;
  }
  return false;
}

// Crash points inside the background steps of phase C: op ranges [first, end)
// as counted by the FaultInjectionFileSystem (filled when the workload is
// given an op counter).
struct WorkloadSteps {
  std::vector<std::pair<uint64_t, uint64_t>> retention, compaction, delayed_delete;
  static bool In(const std::vector<std::pair<uint64_t, uint64_t>>& ranges, uint64_t op) {
    for (const auto& [first, end] : ranges) {
      if (op >= first && op < end) return true;
    }
    return false;
  }
};

using WorkloadModel = std::map<TopicPartition, PartitionModel>;

inline LogConfig CrashMatrixConfig(uint64_t seed) {
  LogConfig c;
  c.segment_bytes = 600 + int32_t(seed % 5) * 150;
  c.index_interval_bytes = 90;
  c.segment_index_bytes = 1200;  // a multiple of 8 and 12
  return c;
}

inline LogConfig CompactedConfig(uint64_t seed) {
  LogConfig c = CrashMatrixConfig(seed);
  c.compact = true;
  c.delete_policy = false;
  return c;
}

constexpr int64_t kWorkloadCleanerBackoffMs = 1000;

class CrashWorkload {
 public:
  // `op_counter` (optional) reads the FaultInjectionFileSystem's op count, to
  // record where the background steps are (steps()).
  CrashWorkload(FileSystem* fs, std::string log_dir, uint64_t seed, ManualClock* clock,
                bool background_steps = false, std::function<uint64_t()> op_counter = {})
      : fs_(fs),
        log_dir_(std::move(log_dir)),
        seed_(seed),
        rng_(seed),
        clock_(clock),
        background_(background_steps),
        op_counter_(std::move(op_counter)) {}

  Status Run() {
    const LogConfig config = CrashMatrixConfig(seed_);
    {
      DARUMA_ASSIGN_OR_RETURN(auto plain,
                              Log::CreateEmpty(fs_, PartDir(kPlainTp), kPlainTp, config, clock_));
      DARUMA_ASSIGN_OR_RETURN(auto txn,
                              Log::CreateEmpty(fs_, PartDir(kTxnTp), kTxnTp, config, clock_));
      std::unique_ptr<Log> compacted;
      if (background_) {
        DARUMA_ASSIGN_OR_RETURN(compacted, Log::CreateEmpty(fs_, PartDir(kCompactTp), kCompactTp,
                                                            CompactedConfig(seed_), clock_));
      }
      // Log::CreateEmpty does not fsync the log dir after creating the
      // partition dir, so without this a power loss can drop the whole
      // partition (finding pinned by tests/log/log_create_crash_test.cc). A
      // broker's create path must do it; the matrix does it here so it can
      // look for other problems.
      DARUMA_RETURN_IF_ERROR(fs_->SyncDir(log_dir_));
      for (int round = 0; round < 10; ++round) {
        DARUMA_RETURN_IF_ERROR(Round(plain.get(), txn.get(), compacted.get()));
      }
      DARUMA_RETURN_IF_ERROR(plain->Close());
      DARUMA_RETURN_IF_ERROR(txn->Close());
      if (compacted) DARUMA_RETURN_IF_ERROR(compacted->Close());
    }
    for (int phase = 0; phase < 2; ++phase) {
      LogManager manager(ManagerOptions(phase));
      DARUMA_RETURN_IF_ERROR(manager.Startup({log_dir_}, config, 1));
      Log* plain = manager.GetLog(kPlainTp);
      Log* txn = manager.GetLog(kTxnTp);
      Log* compacted = background_ ? manager.GetLog(kCompactTp) : nullptr;
      if (manager.HasFailures() || plain == nullptr || txn == nullptr ||
          (background_ && compacted == nullptr)) {
        return Status::IoError("workload: start-up left the dir offline or a log unloaded");
      }
      // Start-up fsyncs every recovered log before writing its checkpoints.
      AckAll(plain, txn, compacted);
      if (phase == 0 && background_) {
        manager.SetTopicConfig(kCompactTp.topic, CompactedConfig(seed_));
        DARUMA_RETURN_IF_ERROR(manager.failure_channel().ErrorFor(log_dir_));
      }
      for (int round = 0; round < 8; ++round) {
        DARUMA_RETURN_IF_ERROR(Round(plain, txn, compacted));
      }
      if (phase == 0) {
        // Shutdown destroys the logs: their ends are read first.
        std::map<TopicPartition, int64_t> ends = {{kPlainTp, plain->log_end_offset()},
                                                  {kTxnTp, txn->log_end_offset()}};
        if (compacted) ends[kCompactTp] = compacted->log_end_offset();
        DARUMA_RETURN_IF_ERROR(manager.Shutdown());
        for (const auto& [tp, end] : ends) model_[tp].acked_end = end;
      } else {
        if (background_) DARUMA_RETURN_IF_ERROR(BackgroundSteps(manager, plain, txn, compacted));
        DARUMA_RETURN_IF_ERROR(FlushAll(plain, txn, compacted));
      }
    }
    return Status::Ok();
  }

  const WorkloadModel& model() const { return model_; }
  const WorkloadSteps& steps() const { return steps_; }

 private:
  std::string PartDir(const TopicPartition& tp) const { return JoinPath(log_dir_, LogDirName(tp)); }

  // Phase B: no jobs. Phase C: kManual jobs (run only in BackgroundSteps)
  // and the cleaner.
  LogManagerOptions ManagerOptions(int phase) const {
    LogManagerOptions options;
    options.fs = fs_;
    options.clock = clock_;
    options.broker_epoch = 5 + phase;
    options.jobs.mode = Scheduler::Mode::kManual;
    if (phase == 1 && background_) {
      options.jobs.enabled = true;
      options.jobs.initial_delay_ms = kWorkloadCleanerBackoffMs;
      options.jobs.cleaner_enabled = true;
      options.jobs.cleaner.backoff_ms = kWorkloadCleanerBackoffMs;
      options.jobs.cleaner.dedupe_buffer_size = 24 * 4096;
      options.jobs.cleaner.io_buffer_size = 8192;
    }
    return options;
  }

  // The log is durable up to its end: acknowledged, and (with background
  // steps, which act only below it) committed.
  void Ack(Log* log, const TopicPartition& tp) {
    model_[tp].acked_end = log->log_end_offset();
    if (background_) log->UpdateHighWatermark(log->log_end_offset());
  }

  void AckAll(Log* plain, Log* txn, Log* compacted) {
    Ack(plain, kPlainTp);
    Ack(txn, kTxnTp);
    if (compacted) Ack(compacted, kCompactTp);
  }

  // compacted may be null (no background steps).
  Status FlushAll(Log* plain, Log* txn, Log* compacted) {
    for (auto [log, tp] : {std::pair{plain, kPlainTp}, {txn, kTxnTp}, {compacted, kCompactTp}}) {
      if (log == nullptr) continue;
      const int64_t end = log->log_end_offset();
      DARUMA_RETURN_IF_ERROR(log->Flush(end));
      model_[tp].acked_end = end;
      if (background_) log->UpdateHighWatermark(end);
    }
    return Status::Ok();
  }

  uint64_t Ops() const { return op_counter_ ? op_counter_() : 0; }

  // DeleteRecords targets a batch boundary: ScanLog (log_invariants.h) reads
  // from the log start offset and counts a first batch starting below it as a
  // gap, although Kafka allows a log start inside a batch.
  int64_t BatchBaseAtOrBelow(const TopicPartition& tp, int64_t offset) const {
    const std::set<int64_t>& bases = batch_bases_.at(tp);
    auto it = bases.upper_bound(offset);
    return it == bases.begin() ? 0 : *std::prev(it);
  }

  // Runs `step` and records its op range in *ranges.
  Status Step(std::vector<std::pair<uint64_t, uint64_t>>* ranges,
              const std::function<Status()>& step) {
    const uint64_t first = Ops() + 1;
    Status st = step();
    ranges->emplace_back(first, Ops() + 1);
    return st;
  }

  // A job's I/O error takes the dir offline instead of returning it.
  Status JobsOk(LogManager& manager) {
    DARUMA_RETURN_IF_ERROR(manager.failure_channel().ErrorFor(log_dir_));
    const auto errors = manager.JobErrors();
    return errors.empty() ? Status::Ok() : Status::IoError("workload: job error: " + errors[0]);
  }

  Status BackgroundSteps(LogManager& manager, Log* plain, Log* txn, Log* compacted) {
    DARUMA_RETURN_IF_ERROR(FlushAll(plain, txn, compacted));
    DARUMA_RETURN_IF_ERROR(Step(&steps_.retention, [&]() -> Status {
      const int64_t target = BatchBaseAtOrBelow(kPlainTp, plain->high_watermark() / 3);
      model_[kPlainTp].deletable_below = std::max(model_[kPlainTp].deletable_below, target);
      DARUMA_RETURN_IF_ERROR(plain->MaybeIncrementLogStartOffset(target));
      DARUMA_RETURN_IF_ERROR(manager.RunRetention(plain).status());
      return manager.CheckpointLogStartOffsets();
    }));
    for (int round = 0; round < 2; ++round) {
      DARUMA_RETURN_IF_ERROR(Round(plain, txn, compacted));
    }
    DARUMA_RETURN_IF_ERROR(FlushAll(plain, txn, compacted));
    DARUMA_RETURN_IF_ERROR(Step(&steps_.compaction, [&]() -> Status {
      clock_->Advance(kWorkloadCleanerBackoffMs);
      manager.RunDueJobsForTest();
      return JobsOk(manager);
    }));
    for (int round = 0; round < 2; ++round) {
      DARUMA_RETURN_IF_ERROR(Round(plain, txn, compacted));
    }
    return Step(&steps_.delayed_delete, [&]() -> Status {
      clock_->Advance(CrashMatrixConfig(seed_).file_delete_delay_ms);
      manager.RunDueJobsForTest();
      return JobsOk(manager);
    });
  }

  std::vector<RecordInput> Records(const std::string& tag, int n) {
    std::vector<RecordInput> out;
    for (int i = 0; i < n; ++i) {
      RecordInput r;
      r.timestamp = kWorkloadNowMs + int64_t(counter_);
      r.key = "k" + std::to_string(counter_ % 7);
      r.value = tag + "-" + std::to_string(counter_++) + std::string(rng_() % 40, 'x');
      out.push_back(std::move(r));
    }
    return out;
  }

  // The model records the batch at the LEO *before* appending: an append
  // that fails part-way may still have reached the file, so its records are
  // legitimately readable after recovery (never acknowledged, though).
  Status Append(Log* log, const TopicPartition& tp, const Bytes& batch,
                const std::vector<RecordInput>& records, AppendOrigin origin) {
    auto& written = model_[tp].written;
    const int64_t leo = log->log_end_offset();
    const size_t n = std::max<size_t>(records.size(), 1);
    for (size_t i = 0; i < n; ++i) {
      written[leo + int64_t(i)] = records.empty() ? std::nullopt : records[i].value;
    }
    DARUMA_ASSIGN_OR_RETURN(LogAppendInfo info, log->AppendAsLeader(batch, 3, origin));
    if (info.duplicate) {
      for (size_t i = 0; i < n; ++i) written.erase(leo + int64_t(i));
    } else {
      // A recovery may have truncated an unacknowledged tail: bases recorded
      // at or above this LEO belong to batches that are gone.
      std::set<int64_t>& bases = batch_bases_[tp];
      bases.erase(bases.lower_bound(leo), bases.end());
      bases.insert(leo);
    }
    if (!info.duplicate && info.first_offset != leo) {
      return Status::InvalidArgument("workload: append landed at " +
                                     std::to_string(info.first_offset) + ", LEO was " +
                                     std::to_string(leo));
    }
    return Status::Ok();
  }

  // profiles-2: one batch of a once-used key plus 1-2 shared keys.
  Status AppendCompacted(Log* compacted) {
    std::vector<RecordInput> records = Records("c", 1 + 1 + int(rng_() % 2));
    records[0].key = "once-" + std::to_string(counter_);
    for (size_t i = 1; i < records.size(); ++i) records[i].key = "s" + std::to_string(rng_() % 4);
    DARUMA_ASSIGN_OR_RETURN(Bytes batch, BuildRecordBatch({}, records));
    const int64_t leo = compacted->log_end_offset();
    for (size_t i = 0; i < records.size(); ++i) {
      model_[kCompactTp].keys[leo + int64_t(i)] = *records[i].key;
    }
    return Append(compacted, kCompactTp, batch, records, AppendOrigin::kClient);
  }

  Status Round(Log* plain, Log* txn, Log* compacted) {
    // profiles-2 every other round (keeps the matrix's cost down).
    if (compacted && ++rounds_ % 2 == 0) DARUMA_RETURN_IF_ERROR(AppendCompacted(compacted));
    // orders-0: a plain batch, and an idempotent one (sometimes retried).
    auto records = Records("p", 1 + int(rng_() % 3));
    DARUMA_ASSIGN_OR_RETURN(Bytes batch, BuildRecordBatch({}, records));
    DARUMA_RETURN_IF_ERROR(Append(plain, kPlainTp, batch, records, AppendOrigin::kClient));
    if (rng_() % 2 == 0) {
      BatchBuilderOptions o;
      o.producer_id = 7000;
      o.producer_epoch = 0;
      o.base_sequence = idempotent_seq_;
      auto idem = Records("i", 1 + int(rng_() % 2));
      DARUMA_ASSIGN_OR_RETURN(Bytes b, BuildRecordBatch(o, idem));
      idempotent_seq_ += int32_t(idem.size());
      DARUMA_RETURN_IF_ERROR(Append(plain, kPlainTp, b, idem, AppendOrigin::kClient));
      if (rng_() % 3 == 0) {
        DARUMA_RETURN_IF_ERROR(Append(plain, kPlainTp, b, idem, AppendOrigin::kClient));
      }
    }
    // payments-1: a transaction of 1-3 batches, then its marker.
    BatchBuilderOptions t;
    t.producer_id = 8000;
    t.producer_epoch = 0;
    t.is_transactional = true;
    t.base_sequence = txn_seq_;
    auto txn_records = Records("t", 1 + int(rng_() % 2));
    DARUMA_ASSIGN_OR_RETURN(Bytes tb, BuildRecordBatch(t, txn_records));
    txn_seq_ += int32_t(txn_records.size());
    DARUMA_RETURN_IF_ERROR(Append(txn, kTxnTp, tb, txn_records, AppendOrigin::kClient));
    if (++txn_batches_ >= 1 + int(rng_() % 3)) {
      const auto type = rng_() % 2 ? ControlRecordType::kCommit : ControlRecordType::kAbort;
      Bytes marker = BuildEndTxnMarkerBatch(0, 3, 8000, 0, type, 1, kWorkloadNowMs);
      DARUMA_RETURN_IF_ERROR(Append(txn, kTxnTp, marker, {}, AppendOrigin::kCoordinator));
      txn_batches_ = 0;
    }
    if (rng_() % 3 == 0) {
      auto extra = Records("q", 1);
      DARUMA_ASSIGN_OR_RETURN(Bytes eb, BuildRecordBatch({}, extra));
      DARUMA_RETURN_IF_ERROR(Append(txn, kTxnTp, eb, extra, AppendOrigin::kClient));
    }
    if (rng_() % 7 == 0) DARUMA_RETURN_IF_ERROR(plain->Roll());
    if (rng_() % 3 == 0) DARUMA_RETURN_IF_ERROR(FlushAll(plain, txn, compacted));
    return Status::Ok();
  }

  FileSystem* fs_;
  std::string log_dir_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  ManualClock* clock_;
  bool background_;
  std::function<uint64_t()> op_counter_;
  WorkloadModel model_;
  WorkloadSteps steps_;
  uint64_t counter_ = 0;
  int32_t idempotent_seq_ = 0;
  int32_t txn_seq_ = 0;
  int txn_batches_ = 0;
  int rounds_ = 0;
  std::map<TopicPartition, std::set<int64_t>> batch_bases_;
};

// Counts across a matrix run (printed by the tests, parsed by the scripts).
struct CrashTally {
  int64_t points = 0;
  int64_t recoveries = 0;
  int64_t recovery_failures = 0;
  int64_t acked_lost = 0;
  int64_t invalid_served = 0;
  int64_t divergent = 0;  // a served record differs from what was written there
  int64_t index_problems = 0;
  int64_t producer_state_problems = 0;
  int64_t checkpoint_problems = 0;
  int64_t second_recovery_diffs = 0;
  std::vector<std::string> examples;  // at most 3 per category
  std::map<std::string, int> noted;

  void Note(const std::string& category, const std::string& what) {
    if (noted[category]++ < 3) examples.push_back(category + ": " + what);
  }
  bool Clean() const {
    return recovery_failures == 0 && acked_lost == 0 && invalid_served == 0 && divergent == 0 &&
           index_problems == 0 && producer_state_problems == 0 && checkpoint_problems == 0 &&
           second_recovery_diffs == 0;
  }
  std::string Summary() const {
    return "points=" + std::to_string(points) + " recoveries=" + std::to_string(recoveries) +
           " recovery_failures=" + std::to_string(recovery_failures) +
           " acked_lost=" + std::to_string(acked_lost) +
           " invalid_served=" + std::to_string(invalid_served) +
           " divergent=" + std::to_string(divergent) +
           " index_problems=" + std::to_string(index_problems) +
           " producer_state_problems=" + std::to_string(producer_state_problems) +
           " checkpoint_problems=" + std::to_string(checkpoint_problems) +
           " second_recovery_diffs=" + std::to_string(second_recovery_diffs);
  }
};

// Every file under `root` with its size; checkpoint files with contents.
inline std::map<std::string, std::string> DirListing(const MemFileSystem& fs,
                                                     const std::string& root) {
  std::map<std::string, std::string> out;
  for (const auto& [path, data] : fs.Files(root)) {
    if (path.find("checkpoint") != std::string::npos) {
      out[path] = std::string(data.begin(), data.end());
    } else {
      out[path] = std::to_string(data.size()) + " bytes";
    }
  }
  return out;
}

inline std::string ListingDiff(const std::map<std::string, std::string>& a,
                               const std::map<std::string, std::string>& b) {
  std::string out;
  for (const auto& [k, v] : a) {
    auto it = b.find(k);
    if (it == b.end())
      out += " -" + k;
    else if (it->second != v)
      out += " ~" + k + " (" + v + " -> " + it->second + ")";
  }
  for (const auto& [k, v] : b) {
    if (!a.count(k)) out += " +" + k;
  }
  return out;
}

// Checks the model's invariants on one started manager's logs.
inline void CheckRecoveredLogs(LogManager& manager, MemFileSystem* image,
                               const std::string& log_dir, const WorkloadModel& model,
                               const std::string& label, CrashTally* tally) {
  for (const auto& [tp, part] : model) {
    Log* log = manager.GetLog(tp);
    if (log == nullptr) {
      if (part.acked_end > 0) {
        tally->acked_lost += part.acked_end;
        tally->Note("acked_lost", label + ": " + tp.ToString() + " missing, " +
                                      std::to_string(part.acked_end) + " acked records lost");
      }
      continue;
    }
    LogScan scan = ScanLog(log);
    tally->invalid_served += int64_t(scan.invalid.size());
    for (const auto& s : scan.invalid)
      tally->Note("invalid_served", label + ": " + tp.ToString() + ": " + s);
    std::vector<bool> seen(size_t(std::max<int64_t>(part.acked_end, 0)), false);
    for (const ScannedRecord& r : scan.records) {
      auto it = part.written.find(r.offset);
      const bool same =
          it != part.written.end() && it->second == (r.control ? std::nullopt : r.value);
      if (!same) {
        ++tally->divergent;
        tally->Note("divergent", label + ": " + tp.ToString() + " offset " +
                                     std::to_string(r.offset) + " holds " +
                                     r.value.value_or("<marker>") + ", not what was written");
      }
      if (r.offset >= 0 && r.offset < part.acked_end) seen[size_t(r.offset)] = true;
    }
    int64_t lost = 0;
    for (size_t o = 0; o < seen.size(); ++o) lost += !seen[o] && !MayBeGone(part, int64_t(o));
    if (lost > 0) {
      tally->acked_lost += lost;
      tally->Note("acked_lost", label + ": " + tp.ToString() + " lost " + std::to_string(lost) +
                                    " acked records (acked end " + std::to_string(part.acked_end) +
                                    ", LEO " + std::to_string(log->log_end_offset()) + ")");
    }
    // Counted once per recovered log (a bad index has many bad slots).
    if (const auto p = CheckIndexes(log); !p.empty()) {
      ++tally->index_problems;
      tally->Note("index", label + ": " + p[0] + " (+" + std::to_string(p.size() - 1) + " more)");
    }
    if (const auto p = CheckProducerState(log, scan); !p.empty()) {
      ++tally->producer_state_problems;
      tally->Note("producer_state", label + ": " + tp.ToString() + ": " + p[0]);
    }
  }
  for (const char* name : {kRecoveryPointCheckpointFile, kLogStartOffsetCheckpointFile}) {
    auto file = OffsetCheckpointFile::Open(JoinPath(log_dir, name), image);
    auto map = file.ok() ? file->Read() : Result<OffsetMap>(file.status());
    if (!map.ok()) {
      ++tally->checkpoint_problems;
      tally->Note("checkpoint", label + ": " + name + " unreadable: " + map.status().ToString());
      continue;
    }
    for (const auto& [tp, offset] : *map) {
      Log* log = manager.GetLog(tp);
      if (log == nullptr || offset > log->log_end_offset() || offset < 0) {
        ++tally->checkpoint_problems;
        tally->Note("checkpoint", label + ": " + name + " has " + tp.ToString() + " at " +
                                      std::to_string(offset) + " beyond the LEO");
      }
    }
  }
}

// Recovers `image` twice (the second start after dropping the first manager
// without shutdown, like a crash) and checks every invariant.
inline void RecoverAndCheck(MemFileSystem* image, const std::string& log_dir,
                            const WorkloadModel& model, const LogConfig& config,
                            const std::string& label, CrashTally* tally) {
  ManualClock clock(kWorkloadNowMs);
  LogManagerOptions options;
  options.fs = image;
  options.clock = &clock;
  options.quarantine = true;
  std::map<std::string, std::string> first;
  {
    LogManager manager(options);
    Status st = manager.Startup({log_dir}, config, 1);
    if (!st.ok() || manager.HasFailures()) {
      ++tally->recovery_failures;
      tally->Note("recovery_failure", label + ": recovery failed: " + st.ToString() + " " +
                                          manager.ReportJson().dump());
      return;
    }
    ++tally->recoveries;
    CheckRecoveredLogs(manager, image, log_dir, model, label, tally);
    first = DirListing(*image, log_dir);
  }
  LogManager again(options);
  Status st = again.Startup({log_dir}, config, 1);
  if (!st.ok() || again.HasFailures()) {
    ++tally->recovery_failures;
    tally->Note("recovery_failure", label + ": second recovery failed: " + st.ToString());
    return;
  }
  ++tally->recoveries;
  const auto second = DirListing(*image, log_dir);
  if (first != second) {
    ++tally->second_recovery_diffs;
    tally->Note("second_recovery_diff",
                label + ": second recovery changed:" + ListingDiff(first, second));
  }
}

}  // namespace daruma::testing
