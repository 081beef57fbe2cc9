#include "tools/repair_command.h"

#include <fmt/format.h>

#include <atomic>
#include <mutex>
#include <nlohmann/json.hpp>
#include <ostream>
#include <thread>

#include "common/bytes.h"
#include "common/file_system.h"
#include "log/clean_shutdown_file.h"
#include "log/offset_checkpoint_file.h"
#include "recovery/dir_lock.h"
#include "recovery/log_checker.h"
#include "recovery/log_loader.h"
#include "recovery/log_manager.h"

namespace daruma::tools {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitRefused = 1;
constexpr int kExitError = 2;

int64_t Find(const OffsetMap& m, const TopicPartition& tp) {
  auto it = m.find(tp);
  return it == m.end() ? 0 : it->second;
}

void PrintPlan(const std::vector<LogDirCheck>& dirs, std::ostream& out) {
  for (const LogDirCheck& d : dirs) {
    if (!d.HasProblems()) continue;
    out << d.path << ":\n";
    for (const CheckProblem& p : d.problems) out << "  " << p.ToString() << "\n";
    for (const PartitionCheck& p : d.partitions) {
      if (p.problems.empty()) continue;
      out << fmt::format("  {}: drop {} bytes of segment data, LEO {} after repair, {} changes\n",
                         p.tp.ToString(), p.data_bytes_dropped, p.plan.log_end_offset,
                         p.changes.size());
      for (const CheckProblem& q : p.problems) out << "    " << q.ToString() << "\n";
    }
  }
}

// Why the plan may not be applied; "" when it may.
std::string Refusal(const std::vector<LogDirCheck>& dirs, int64_t limit) {
  for (const LogDirCheck& d : dirs) {
    for (const PartitionCheck& p : d.partitions) {
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

// The applied result of one log dir.
struct Applied {
  std::string path;
  std::vector<PartitionRecoveryReport> partitions;
  bool had_marker = false;
};

// Loads every partition of the plan for real (recovery point 0, quarantine
// on), closes it cleanly and fills the new checkpoint values.
Status LoadPartitions(const LogDirCheck& plan, int threads, Applied* applied, OffsetMap* rp,
                      OffsetMap* ls, OffsetMap* hw) {
  FileSystem* fs = FileSystem::Default();
  applied->partitions.resize(plan.partitions.size());
  std::mutex mu;
  Status first_error;
  std::atomic<size_t> next{0};
  auto worker = [&]() {
    for (size_t i = next.fetch_add(1); i < plan.partitions.size(); i = next.fetch_add(1)) {
      const PartitionCheck& p = plan.partitions[i];
      PartitionRecoveryReport& pr = applied->partitions[i];
      LoadLogParams params{.fs = fs,
                           .log_dir = plan.path,
                           .partition_dir = p.dir,
                           .tp = p.tp,
                           .config = LogConfig{},
                           .clock = Clock::System(),
                           .had_clean_shutdown = false,
                           .recovery_point_checkpoint = 0,
                           .log_start_offset_checkpoint = Find(plan.log_start_offsets, p.tp),
                           .quarantine = true,
                           .remaining_segments = nullptr,
                           .scanned_bytes_progress = nullptr};
      auto log = LoadLog(params, &pr);
      Status st = log.status();
      if (st.ok()) {
        (*log)->UpdateHighWatermark(Find(plan.high_watermarks, p.tp));
        st = (*log)->FlushAll();
      }
      std::lock_guard<std::mutex> lock(mu);
      if (st.ok()) {
        (*rp)[p.tp] = (*log)->log_end_offset();
        (*ls)[p.tp] = (*log)->log_start_offset();
        (*hw)[p.tp] = (*log)->high_watermark();
        pr.high_watermark = (*log)->high_watermark();
        st = (*log)->Close();
      }
      if (!st.ok()) {
        pr.errors.push_back(st.ToString());
        if (first_error.ok()) first_error = st.WithContext(p.dir);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < std::min<int>(threads, int(plan.partitions.size())); ++t) {
    pool.emplace_back(worker);
  }
  worker();
  for (auto& t : pool) t.join();
  return first_error;
}

Status WriteCheckpoint(const std::string& dir, const char* name, const OffsetMap& map) {
  DARUMA_ASSIGN_OR_RETURN(auto file, OffsetCheckpointFile::Open(JoinPath(dir, name)));
  return file.Write(map);
}

Status ApplyDir(const LogDirCheck& plan, int threads, Applied* applied) {
  FileSystem* fs = FileSystem::Default();
  auto lock = DirLock::Acquire(plan.path);
  if (!lock.ok()) {
    if (DirLock::IsHeldElsewhere(lock.status())) {
      return Status::InvalidArgument(
          "log dir " + plan.path +
          " is locked by a running broker (stop it first): " + lock.status().message());
    }
    return lock.status();
  }
  CleanShutdownFile marker(plan.path, fs);
  applied->had_marker = marker.Exists();
  std::vector<uint8_t> marker_bytes;
  if (applied->had_marker) {
    DARUMA_ASSIGN_OR_RETURN(marker_bytes, fs->ReadFile(marker.path()));
    DARUMA_RETURN_IF_ERROR(marker.Remove());
    DARUMA_RETURN_IF_ERROR(fs->SyncDir(plan.path));
  }
  // Entries of partitions not in this dir are carried over unchanged.
  OffsetMap rp = plan.recovery_points, ls = plan.log_start_offsets, hw = plan.high_watermarks;
  DARUMA_RETURN_IF_ERROR(LoadPartitions(plan, threads, applied, &rp, &ls, &hw));
  DARUMA_RETURN_IF_ERROR(WriteCheckpoint(plan.path, kRecoveryPointCheckpointFile, rp));
  DARUMA_RETURN_IF_ERROR(WriteCheckpoint(plan.path, kLogStartOffsetCheckpointFile, ls));
  DARUMA_RETURN_IF_ERROR(WriteCheckpoint(plan.path, kReplicationOffsetCheckpointFile, hw));
  if (applied->had_marker) {
    DARUMA_RETURN_IF_ERROR(fs->WriteFileAtomically(marker.path(), marker_bytes));
  }
  return Status::Ok();
}

Status WriteReport(const std::string& path, const std::vector<LogDirCheck>& plan,
                   const std::vector<Applied>& applied, bool dry_run, const std::string& refusal) {
  nlohmann::json j = {{"dryRun", dry_run}, {"plan", nlohmann::json::array()}};
  for (const LogDirCheck& d : plan) j["plan"].push_back(ToJson(d));
  if (!refusal.empty()) j["refused"] = refusal;
  if (!applied.empty()) {
    RecoveryReport r;
    for (size_t i = 0; i < applied.size(); ++i) {  // one entry per repaired dir
      r.log_dirs.push_back({applied[i].path, applied[i].had_marker, std::nullopt, false, ""});
      for (const auto& p : applied[i].partitions) r.partitions.push_back(p);
    }
    j["applied"] = r.ToJson();
  }
  const std::string text = j.dump(2) + "\n";
  return FileSystem::Default()->WriteFileAtomically(path, AsBytes(text));
}

Result<std::vector<LogDirCheck>> Plan(const RepairCommandOptions& o, std::ostream& err) {
  std::atomic<int64_t> scanned{0}, remaining{1};
  daruma::CheckOptions co;
  co.threads = o.threads;
  co.scanned_bytes = &scanned;
  co.remaining_partitions = &remaining;
  const int64_t total = EstimateCheckBytes(FileSystem::Default(), o.log_dirs);
  ProgressReporter progress(
      [&] {
        return ProgressSnapshot{scanned.load(), total, remaining.load(), 0};
      },
      o.progress, err);
  progress.Start();
  std::vector<LogDirCheck> dirs;
  for (const std::string& dir : o.log_dirs) {
    DARUMA_ASSIGN_OR_RETURN(LogDirCheck d, CheckLogDir(dir, co));
    dirs.push_back(std::move(d));
  }
  remaining.store(0);
  return dirs;
}

}  // namespace

int RunRepair(const RepairCommandOptions& o, std::ostream& out, std::ostream& err) {
  if (o.log_dirs.empty() || o.threads < 1 || o.max_corrupt_bytes < -1) {
    err << "daruma repair: pass --log-dirs DIR, --threads >= 1 and --max-corrupt-bytes >= -1\n";
    return kExitError;
  }
  Result<std::vector<LogDirCheck>> plan = Plan(o, err);
  if (!plan.ok()) {
    err << "daruma repair: nothing was changed: " << plan.status().ToString() << "\n";
    return kExitError;
  }
  bool needed = false;
  for (const LogDirCheck& d : *plan) needed = needed || d.HasProblems();
  std::string refusal = needed ? Refusal(*plan, o.max_corrupt_bytes) : "";
  std::vector<Applied> applied;
  int rc = kExitOk;
  if (!needed) {
    out << "Nothing to repair.\n";
  } else {
    out << (o.dry_run ? "Repair plan (dry run, nothing is changed):\n" : "Repair plan:\n");
    PrintPlan(*plan, out);
    if (!refusal.empty()) {
      err << "daruma repair: refused, nothing was changed: " << refusal << "\n";
      rc = kExitRefused;
    } else if (o.dry_run) {
      out << "Dry run: nothing was changed.\n";
      rc = kExitRefused;
    } else {
      for (const LogDirCheck& d : *plan) {
        if (!d.HasProblems()) continue;
        applied.emplace_back();
        applied.back().path = d.path;
        Status st = ApplyDir(d, o.threads, &applied.back());
        if (!st.ok()) {
          err << "daruma repair: " << d.path << ": " << st.ToString() << "\n";
          rc = kExitRefused;
          applied.pop_back();
          break;
        }
      }
      if (rc == kExitOk)
        out << "Repaired; the dropped bytes are in each partition's daruma-quarantine/.\n";
    }
  }
  if (!o.report_file.empty()) {
    Status st = WriteReport(o.report_file, *plan, applied, o.dry_run, refusal);
    if (!st.ok()) {
      err << "daruma repair: cannot write the report: " << st.ToString() << "\n";
      if (rc == kExitOk) rc = kExitError;
    }
  }
  return rc;
}

}  // namespace daruma::tools
