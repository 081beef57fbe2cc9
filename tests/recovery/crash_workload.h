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
// Acknowledgement: a record is acknowledged once a later Flush/FlushAll or a
// clean Shutdown returned OK (the model keeps `acked_end` per partition).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <random>
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

struct PartitionModel {
  std::map<int64_t, std::optional<std::string>> written;  // value; nullopt for markers
  int64_t acked_end = 0;                                  // every offset below was acknowledged
};

using WorkloadModel = std::map<TopicPartition, PartitionModel>;

inline LogConfig CrashMatrixConfig(uint64_t seed) {
  LogConfig c;
  c.segment_bytes = 600 + int32_t(seed % 5) * 150;
  c.index_interval_bytes = 90;
  c.segment_index_bytes = 1200;  // a multiple of 8 and 12
  return c;
}

class CrashWorkload {
 public:
  CrashWorkload(FileSystem* fs, std::string log_dir, uint64_t seed, Clock* clock)
      : fs_(fs), log_dir_(std::move(log_dir)), seed_(seed), rng_(seed), clock_(clock) {}

  Status Run() {
    const LogConfig config = CrashMatrixConfig(seed_);
    {
      DARUMA_ASSIGN_OR_RETURN(auto plain,
                              Log::CreateEmpty(fs_, PartDir(kPlainTp), kPlainTp, config, clock_));
      DARUMA_ASSIGN_OR_RETURN(auto txn,
                              Log::CreateEmpty(fs_, PartDir(kTxnTp), kTxnTp, config, clock_));
      // Log::CreateEmpty does not fsync the log dir after creating the
      // partition dir, so without this a power loss can drop the whole
      // partition (finding pinned by tests/log/log_create_crash_test.cc). A
      // broker's create path must do it; the matrix does it here so it can
      // look for other problems.
      DARUMA_RETURN_IF_ERROR(fs_->SyncDir(log_dir_));
      for (int round = 0; round < 10; ++round) {
        DARUMA_RETURN_IF_ERROR(Round(plain.get(), txn.get()));
      }
      DARUMA_RETURN_IF_ERROR(plain->Close());
      DARUMA_RETURN_IF_ERROR(txn->Close());
    }
    for (int phase = 0; phase < 2; ++phase) {
      LogManagerOptions options;
      options.fs = fs_;
      options.clock = clock_;
      options.broker_epoch = 5 + phase;
      LogManager manager(options);
      DARUMA_RETURN_IF_ERROR(manager.Startup({log_dir_}, config, 1));
      Log* plain = manager.GetLog(kPlainTp);
      Log* txn = manager.GetLog(kTxnTp);
      if (manager.HasFailures() || plain == nullptr || txn == nullptr) {
        return Status::IoError("workload: start-up left the dir offline or a log unloaded");
      }
      // Start-up fsyncs every recovered log before writing its checkpoints.
      Ack(plain, kPlainTp);
      Ack(txn, kTxnTp);
      for (int round = 0; round < 8; ++round) DARUMA_RETURN_IF_ERROR(Round(plain, txn));
      if (phase == 0) {
        DARUMA_RETURN_IF_ERROR(manager.Shutdown());
        Ack(plain, kPlainTp);
        Ack(txn, kTxnTp);
      } else {
        DARUMA_RETURN_IF_ERROR(FlushBoth(plain, txn));
      }
    }
    return Status::Ok();
  }

  const WorkloadModel& model() const { return model_; }

 private:
  std::string PartDir(const TopicPartition& tp) const { return JoinPath(log_dir_, LogDirName(tp)); }

  void Ack(Log* log, const TopicPartition& tp) { model_[tp].acked_end = log->log_end_offset(); }

  Status FlushBoth(Log* plain, Log* txn) {
    const int64_t plain_end = plain->log_end_offset();
    const int64_t txn_end = txn->log_end_offset();
    DARUMA_RETURN_IF_ERROR(plain->Flush(plain_end));
    model_[kPlainTp].acked_end = plain_end;
    DARUMA_RETURN_IF_ERROR(txn->Flush(txn_end));
    model_[kTxnTp].acked_end = txn_end;
    return Status::Ok();
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
    } else if (info.first_offset != leo) {
      return Status::InvalidArgument("workload: append landed at " +
                                     std::to_string(info.first_offset) + ", LEO was " +
                                     std::to_string(leo));
    }
    return Status::Ok();
  }

  Status Round(Log* plain, Log* txn) {
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
    if (rng_() % 3 == 0) DARUMA_RETURN_IF_ERROR(FlushBoth(plain, txn));
    return Status::Ok();
  }

  FileSystem* fs_;
  std::string log_dir_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  Clock* clock_;
  WorkloadModel model_;
  uint64_t counter_ = 0;
  int32_t idempotent_seq_ = 0;
  int32_t txn_seq_ = 0;
  int txn_batches_ = 0;
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
    const int64_t lost = std::count(seen.begin(), seen.end(), false);
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
