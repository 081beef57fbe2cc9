#include "recovery/log_repairer.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "log/clean_shutdown_file.h"
#include "log/leader_epoch_file_cache.h"
#include "log/log_cleaner.h"
#include "log/log_file_names.h"
#include "log/offset_checkpoint_file.h"
#include "recovery/dir_lock.h"
#include "recovery/load_transaction.h"
#include "recovery/load_undo_pack.h"
#include "recovery/log_loader.h"
#include "recovery/log_manager.h"
#include "recovery/quarantine.h"
#include "recovery/salvage_apply.h"
#include "recovery/scrub_findings_check.h"
#include "recovery/topic_config_check.h"
#include "recovery/topic_config_file.h"

namespace daruma {
namespace {

int64_t Find(const OffsetMap& m, const TopicPartition& tp) {
  auto it = m.find(tp);
  return it == m.end() ? 0 : it->second;
}

struct NewCheckpoints {
  OffsetMap recovery_points, log_start_offsets, high_watermarks;
};

// A leader-epoch-checkpoint the plan found disagreeing with the batches is
// moved into the quarantine; the full scan of the load below then assigns
// every epoch from the batches again.
Status SetAsideBadEpochCheckpoint(const PartitionCheck& p, const RepairApplyOptions& o,
                                  PartitionRecoveryReport* report) {
  const std::string path = JoinPath(p.dir, kLeaderEpochCheckpointFileName);
  const bool reported = std::any_of(p.problems.begin(), p.problems.end(),
                                    [&](const CheckProblem& q) { return q.file == path; });
  if (!reported) return Status::Ok();
  Quarantine quarantine(o.fs, p.dir, p.tp.ToString(), true, report);
  return quarantine.MoveFile(
      path, {DamageKind::kCorruptCheckpoint, std::nullopt, std::nullopt,
             "leader-epoch-checkpoint disagrees with the batches; repair rebuilds it from them"});
}

// The plan's cut (a batch whose baseOffset or partitionLeaderEpoch, outside
// the CRC, contradicts the batches around it): the tail of its segment is
// copied into the quarantine and truncated, every later segment moved there,
// and their index files removed (derived; the load below rebuilds what stays).
Status CutLog(const PartitionCheck& p, const RepairApplyOptions& o,
              PartitionRecoveryReport* report) {
  if (!p.cut) return Status::Ok();
  const LogCut& cut = *p.cut;
  Quarantine quarantine(o.fs, p.dir, p.tp.ToString(), true, report);
  const std::string reason =
      "batch header field outside the CRC contradicts the batches around it; repair cuts the "
      "log here";
  DARUMA_ASSIGN_OR_RETURN(uint64_t size, o.fs->FileSize(cut.file));
  if (int64_t(size) > cut.position) {
    DARUMA_RETURN_IF_ERROR(quarantine.CopyRange(cut.file, cut.position, int64_t(size),
                                                {cut.kind, cut.offset, std::nullopt, reason}));
    DARUMA_ASSIGN_OR_RETURN(auto file, o.fs->Open(cut.file, OpenMode::kReadWrite));
    DARUMA_RETURN_IF_ERROR(file->Truncate(uint64_t(cut.position)));
    DARUMA_RETURN_IF_ERROR(file->Sync());
  }
  DARUMA_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, o.fs->ListDir(p.dir));
  for (const DirEntry& e : entries) {
    if (!e.is_regular || !HasSuffix(e.name, kLogFileSuffix)) continue;
    auto base = OffsetFromFileName(e.name);
    if (!base.ok() || *base <= cut.segment_base) continue;
    DARUMA_RETURN_IF_ERROR(quarantine.MoveFile(
        JoinPath(p.dir, e.name), {DamageKind::kAfterDamage, *base, std::nullopt, reason}));
    for (const std::string& index :
         {OffsetIndexFileName(p.dir, *base), TimeIndexFileName(p.dir, *base),
          TxnIndexFileName(p.dir, *base)}) {
      if (o.fs->Exists(index)) DARUMA_RETURN_IF_ERROR(o.fs->Remove(index));
    }
  }
  return o.fs->SyncDir(p.dir);
}

// Salvage instead of the cut: planned again here, on the transaction's file
// system, so what is applied is what the files hold now.
Status SalvagePartition(const PartitionCheck& p, const RepairApplyOptions& o,
                        PartitionRecoveryReport* report, std::optional<PartitionSalvage>* out) {
  DARUMA_ASSIGN_OR_RETURN(PartitionSalvage plan, PlanSalvage(o.fs, p.dir));
  if (!plan.changed()) return Status::Ok();
  Quarantine quarantine(o.fs, p.dir, p.tp.ToString(), true, report);
  DARUMA_RETURN_IF_ERROR(ApplySalvage(plan, o.fs, &quarantine));
  *out = std::move(plan);
  return Status::Ok();
}

// A transaction still open after salvage from before a gap may have lost
// its COMMIT/ABORT marker in a dropped range: the coordinator thinks it
// complete and will not write the marker again, so the last stable offset
// stays there (a hanging transaction, as Kafka calls it).
void WarnOpenTransaction(const Log& log, PartitionSalvage* salvaged,
                         PartitionRecoveryReport* report) {
  const std::optional<int64_t> open = log.first_unstable_offset();
  if (!open || salvaged->gaps.empty() || *open > salvaged->gaps.back().last) return;
  const std::string warning = fmt::format(
      "a transaction is open from offset {}, before the offset gap [{}, {}]: its COMMIT/ABORT "
      "marker may have been in a dropped range; read_committed consumers stop at offset {} until "
      "it is aborted",
      *open, salvaged->gaps.back().first, salvaged->gaps.back().last, *open);
  salvaged->warnings.push_back(warning);
  report->warnings.push_back(warning);
}

// Step 3 for one partition: set aside, cut (or salvage), load for real, flush,
// note the new checkpoint values, close. All of it is one LoadTransaction: if any step
// fails, the partition dir is left byte for byte as it was.
Status RepairPartition(const LogDirCheck& plan, const PartitionCheck& p,
                       const RepairApplyOptions& o, PartitionRecoveryReport* report,
                       std::optional<PartitionSalvage>* salvaged, std::mutex* mu,
                       NewCheckpoints* out) {
  DARUMA_RETURN_IF_ERROR(LoadTransaction::RollBackInterrupted(o.fs, p.dir, report));
  std::shared_ptr<LoadTransaction> txn = LoadTransaction::Begin(o.fs, p.dir);
  RepairApplyOptions in_txn = o;
  in_txn.fs = txn->fs();
  LoadLogParams params{.fs = in_txn.fs,
                       .log_dir = plan.path,
                       .partition_dir = p.dir,
                       .tp = p.tp,
                       .config = o.config,
                       .clock = o.clock,
                       .had_clean_shutdown = false,
                       .recovery_point_checkpoint = 0,
                       .log_start_offset_checkpoint = Find(plan.log_start_offsets, p.tp),
                       .quarantine = true,
                       .remaining_segments = nullptr,
                       .scanned_bytes_progress = nullptr,
                       .transaction = txn};
  std::unique_ptr<Log> log;
  Status st = SetAsideBadEpochCheckpoint(p, in_txn, report);
  if (st.ok()) {
    st = o.salvage ? SalvagePartition(p, in_txn, report, salvaged) : CutLog(p, in_txn, report);
  }
  if (st.ok()) {
    auto loaded = LoadLog(params, report);
    if (loaded.ok()) {
      log = std::move(*loaded);
    } else {
      st = loaded.status();
    }
  }
  if (st.ok() && salvaged->has_value()) WarnOpenTransaction(*log, &**salvaged, report);
  if (st.ok()) {
    log->UpdateHighWatermark(Find(plan.high_watermarks, p.tp));
    st = log->FlushAll();
  }
  if (st.ok()) st = txn->Commit();
  if (!st.ok()) {
    if (log) (void)log->Close();
    log.reset();  // before the files are restored
    salvaged->reset();
    return txn->RollbackAfter(st, report);
  }
  {
    std::lock_guard<std::mutex> lock(*mu);
    out->recovery_points[p.tp] = log->log_end_offset();
    out->log_start_offsets[p.tp] = log->log_start_offset();
    out->high_watermarks[p.tp] = log->high_watermark();
  }
  report->high_watermark = log->high_watermark();
  return log->Close();
}

// Step 3 on `threads` threads; the first error, naming its partition dir.
Status RepairPartitions(const LogDirCheck& plan, const RepairApplyOptions& o,
                        AppliedRepair* applied, NewCheckpoints* out) {
  applied->partitions.resize(plan.partitions.size());
  applied->salvaged.resize(plan.partitions.size());
  std::mutex mu;
  Status first_error;
  std::atomic<size_t> next{0};
  auto worker = [&]() {
    for (size_t i = next.fetch_add(1); i < plan.partitions.size(); i = next.fetch_add(1)) {
      const PartitionCheck& p = plan.partitions[i];
      PartitionRecoveryReport& report = applied->partitions[i];
      Status st = RepairPartition(plan, p, o, &report, &applied->salvaged[i], &mu, out);
      if (st.ok()) continue;
      report.errors.push_back(st.ToString());
      report.damage.push_back({DamageKindOfFailure(st), report.errors.back()});
      std::lock_guard<std::mutex> lock(mu);
      if (first_error.ok()) first_error = st.WithContext(p.dir);
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(o.threads, int(plan.partitions.size())); ++t) {
    pool.emplace_back(worker);
  }
  worker();
  for (auto& t : pool) t.join();
  return first_error;
}

Status WriteCheckpoint(FileSystem* fs, const std::string& dir, const char* name,
                       const OffsetMap& map) {
  DARUMA_ASSIGN_OR_RETURN(auto file, OffsetCheckpointFile::Open(JoinPath(dir, name), fs));
  return file.Write(map);
}

// A cleaner-offset-checkpoint the plan reported (unreadable, or an entry
// above the LEO) is rewritten with what parsed, each entry clamped to the
// new LEO (Kafka's cleaner resets an invalid offset to the log start anyway).
Status RewriteCleanerCheckpoint(const LogDirCheck& plan, FileSystem* fs, const OffsetMap& leos) {
  const std::string path = JoinPath(plan.path, kCleanerOffsetCheckpointFileName);
  const bool reported = std::any_of(plan.problems.begin(), plan.problems.end(),
                                    [&](const CheckProblem& q) { return q.file == path; });
  if (!reported) return Status::Ok();
  OffsetMap entries = plan.cleaner_offsets;
  for (auto& [tp, offset] : entries) {
    auto leo = leos.find(tp);
    if (leo != leos.end()) offset = std::min(offset, leo->second);
  }
  return WriteCheckpoint(fs, plan.path, kCleanerOffsetCheckpointFileName, entries);
}

// An unparsable daruma-topic-configs.json is renamed next to itself (never
// rewritten): the broker then runs every topic on the defaults, as it did
// while the file did not parse.
Status SetAsideTopicConfigs(const LogDirCheck& plan, FileSystem* fs, AppliedRepair* applied) {
  if (plan.unreadable_topic_configs_bytes == 0) return Status::Ok();
  const std::string from = JoinPath(plan.path, kTopicConfigsFileName);
  const std::string to = SetAsideTopicConfigsPath(fs, plan.path);
  DARUMA_RETURN_IF_ERROR(fs->Rename(from, to));
  DARUMA_RETURN_IF_ERROR(fs->SyncDir(plan.path));
  applied->set_aside.push_back(to);
  return Status::Ok();
}

}  // namespace

std::string RepairRefusal(const std::vector<LogDirCheck>& dirs, int64_t limit) {
  for (const LogDirCheck& d : dirs) {
    if (limit >= 0 && d.unreadable_topic_configs_bytes > limit) {
      return fmt::format(
          "{} does not parse; setting it aside drops its {} bytes (the topic overrides of {}), "
          "more than --max-corrupt-bytes {}; fix the file by hand, or pass --max-corrupt-bytes "
          "{} (or -1) to set it aside",
          JoinPath(d.path, kTopicConfigsFileName), d.unreadable_topic_configs_bytes, d.path, limit,
          d.unreadable_topic_configs_bytes);
    }
    for (const PartitionCheck& p : d.partitions) {
      if (p.load_failed && p.cut) {
        return fmt::format(
            "partition {} cannot be loaded ({}); a batch header field outside the CRC is "
            "damaged at {} at byte {}, offset {}: truncating that file there and moving the "
            "later segments out of the dir (what repair does when the log loads) may make it "
            "loadable; do that by hand, keeping the bytes",
            p.tp.ToString(), p.plan.errors.empty() ? "" : p.plan.errors[0], p.cut->file,
            p.cut->position, p.cut->offset);
      }
      if (p.load_failed) {
        return fmt::format("partition {} cannot be loaded ({}); fix it by hand first",
                           p.tp.ToString(), p.plan.errors.empty() ? "" : p.plan.errors[0]);
      }
      if (limit >= 0 && p.data_bytes_dropped > limit) {
        return fmt::format(
            "partition {} would drop {} bytes of segment data, more than --max-corrupt-bytes {}; "
            "pass --max-corrupt-bytes {} (or -1 for no limit) to accept that",
            p.tp.ToString(), p.data_bytes_dropped, limit, p.data_bytes_dropped);
      }
    }
  }
  return "";
}

Status ApplyRepair(const LogDirCheck& plan, const RepairApplyOptions& o, AppliedRepair* applied) {
  FileSystem* fs = o.fs;
  applied->path = plan.path;
  auto lock = DirLock::Acquire(plan.path);
  if (!lock.ok()) {
    if (DirLock::IsHeldElsewhere(lock.status())) {
      return Status::InvalidArgument(
          "log dir " + plan.path +
          " is locked by a running broker (stop it first): " + lock.status().message());
    }
    return lock.status();
  }
  // A batched start that a crash interrupted is undone first, as the next
  // start would (the plan was made on the dir as that leaves it).
  DARUMA_RETURN_IF_ERROR(RollBackLoadUndoPack(fs, plan.path).status());
  CleanShutdownFile marker(plan.path, fs);
  applied->had_marker = marker.Exists();
  std::vector<uint8_t> marker_bytes;
  if (applied->had_marker) {
    DARUMA_ASSIGN_OR_RETURN(marker_bytes, fs->ReadFile(marker.path()));
    DARUMA_RETURN_IF_ERROR(marker.Remove());
    DARUMA_RETURN_IF_ERROR(fs->SyncDir(plan.path));
  }
  NewCheckpoints cp{plan.recovery_points, plan.log_start_offsets, plan.high_watermarks};
  DARUMA_RETURN_IF_ERROR(RepairPartitions(plan, o, applied, &cp));
  // The broker refuses to serve a range while a scrub finding names it.
  DARUMA_ASSIGN_OR_RETURN(applied->cleared_scrub_findings, ClearRepairedScrubFindings(fs, plan));
  DARUMA_RETURN_IF_ERROR(
      WriteCheckpoint(fs, plan.path, kRecoveryPointCheckpointFile, cp.recovery_points));
  DARUMA_RETURN_IF_ERROR(
      WriteCheckpoint(fs, plan.path, kLogStartOffsetCheckpointFile, cp.log_start_offsets));
  DARUMA_RETURN_IF_ERROR(
      WriteCheckpoint(fs, plan.path, kReplicationOffsetCheckpointFile, cp.high_watermarks));
  DARUMA_RETURN_IF_ERROR(RewriteCleanerCheckpoint(plan, fs, cp.recovery_points));
  DARUMA_RETURN_IF_ERROR(SetAsideTopicConfigs(plan, fs, applied));
  if (applied->had_marker) {
    DARUMA_RETURN_IF_ERROR(fs->WriteFileAtomically(marker.path(), marker_bytes));
  }
  return Status::Ok();
}

}  // namespace daruma
