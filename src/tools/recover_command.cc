#include "tools/recover_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string_view>

#include "common/bytes.h"
#include "common/sanitizers.h"
#include "recovery/clean_shutdown_marker_rule.h"
#include "recovery/log_manager.h"
#include "recovery/server_config.h"
#include "tools/kafka_broker_config.h"
#include "tools/tool_config.h"

namespace daruma::tools {
namespace {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;
constexpr size_t kMaxPartitionLines = 20;
// The broker's crash-loop guard file (broker/crash_loop_guard.h, which tools
// cannot include): its protocol removes it after every clean shutdown, and
// recover ends with one.
constexpr char kCrashLoopGuardFileName[] = ".daruma_unclean_starts";

Result<ToolConfig> ResolveConfig(const RecoverOptions& o) {
  if (!o.config_file.empty() && !o.kafka_config_file.empty()) {
    return Status::InvalidArgument("--config and --kafka-config name the same file: pass one");
  }
  const std::string& file = o.kafka_config_file.empty() ? o.config_file : o.kafka_config_file;
  DARUMA_ASSIGN_OR_RETURN(ToolConfig config, ResolveToolConfig(o.log_dirs, file, o.overrides));
  if (o.threads < 0) return Status::InvalidArgument("--threads: must be at least 1");
  if (o.threads > 0) config.server.num_recovery_threads_per_data_dir = o.threads;
  return config;
}

struct RecoverTotals {
  int64_t partitions = 0, segments = 0, scanned = 0, truncated = 0, quarantined = 0, rebuilt = 0,
          deleted = 0, deleted_leftovers = 0, failed = 0, changed = 0;
};

// The files a load removed that every start removes, Kafka's too
// (IsRoutineRemoval): stray producer snapshots after any restart, leftovers
// of interrupted work. Counted apart from other removals, which are repairs.
int64_t LeftoversRemoved(const PartitionRecoveryReport& p) {
  int64_t n = 0;
  for (const std::string& f : p.deleted_files) n += IsRoutineRemoval(f) ? 1 : 0;
  return n;
}

bool Changed(const PartitionRecoveryReport& p) {
  return p.truncated_bytes > 0 || !p.quarantined.empty() || !p.rebuilt_indexes.empty() ||
         !p.deleted_files.empty();
}

void Add(const PartitionRecoveryReport& p, RecoverTotals* t) {
  ++t->partitions;
  t->segments += int64_t(p.segments.size());
  t->scanned += p.scanned_bytes;
  t->truncated += p.truncated_bytes;
  for (const auto& q : p.quarantined) t->quarantined += q.quarantine_path.empty() ? 0 : q.bytes;
  t->rebuilt += int64_t(p.rebuilt_indexes.size());
  const int64_t leftovers = LeftoversRemoved(p);
  t->deleted += int64_t(p.deleted_files.size()) - leftovers;
  t->deleted_leftovers += leftovers;
  t->failed += p.errors.empty() ? 0 : 1;
  t->changed += Changed(p) ? 1 : 0;
}

RecoverTotals Sum(const RecoveryReport& r) {
  RecoverTotals t;
  for (const auto& p : r.partitions) Add(p, &t);
  return t;
}

// The partitions of one log dir (a partition's dir is <log dir>/<topic>-<n>).
RecoverTotals SumDir(const RecoveryReport& r, const std::string& log_dir) {
  RecoverTotals t;
  const std::string dir = NormalDirPath(log_dir);
  for (const auto& p : r.partitions) {
    if (NormalDirPath(std::filesystem::path(p.dir).parent_path().string()) == dir) Add(p, &t);
  }
  return t;
}

bool Noteworthy(const PartitionRecoveryReport& p) {
  // Rebuilt indexes alone are routine after an unclean shutdown (every
  // recovered segment gets fresh ones), and so are removed leftovers after
  // any restart; both show in the dir line and totals.
  // A leftover removed with quarantine on is quarantined too: that alone
  // is no repair either.
  const bool repair_quarantined =
      std::any_of(p.quarantined.begin(), p.quarantined.end(),
                  [](const auto& q) { return !IsLeftoverFile(q.file); });
  return p.truncated_bytes > 0 || repair_quarantined ||
         int64_t(p.deleted_files.size()) > LeftoversRemoved(p) || !p.errors.empty() ||
         !p.warnings.empty();
}

std::string Plural(int64_t n, std::string_view word) {
  const char* suffix = n == 1 ? "" : word.ends_with('x') ? "es" : "s";
  return fmt::format("{} {}{}", n, word, suffix);
}

// What recovery changed, as "M indexes rebuilt, K truncated, ..."; "" if nothing.
std::string Changes(const RecoverTotals& t) {
  std::vector<std::string> what;
  if (t.rebuilt > 0) what.push_back(Plural(t.rebuilt, "index") + " rebuilt");
  if (t.truncated > 0) what.push_back(HumanBytes(t.truncated) + " truncated");
  if (t.quarantined > 0) what.push_back(HumanBytes(t.quarantined) + " quarantined");
  if (t.deleted > 0) what.push_back(Plural(t.deleted, "file") + " removed");
  if (t.deleted_leftovers > 0) {
    what.push_back(Plural(t.deleted_leftovers, "leftover file") + " removed");
  }
  std::string out;
  for (const std::string& w : what) out += (out.empty() ? "" : ", ") + w;
  return out;
}

// One line per dir saying what happened to it: offline, empty, clean or not,
// and what changed.
std::string DirState(const LogDirReport& d, const RecoveryReport& r) {
  if (d.offline) return "OFFLINE: " + d.error;
  const RecoverTotals t = SumDir(r, d.path);
  if (t.partitions == 0) return "empty log dir: nothing to recover";
  // Those that failed are counted once, as NOT loaded below.
  const int64_t loaded = t.partitions - t.failed;
  std::string state =
      d.clean_shutdown ? fmt::format("clean shutdown: {} loaded", Plural(loaded, "partition"))
                       : fmt::format("unclean shutdown: {} recovered", Plural(loaded, "partition"));
  const std::string changes = Changes(t);
  state += changes.empty() ? ", nothing changed" : ", " + changes;
  if (t.failed > 0) state += fmt::format(", {} NOT loaded", t.failed);
  return state;
}

// "brokerEpoch 7 (why)" / "none written (why)".
std::string MarkerLine(const LogDirReport& d) {
  if (!d.marker_out) return "none written (" + d.marker_why + ")";
  return fmt::format("brokerEpoch {} ({})", *d.marker_out, d.marker_why);
}

void PrintDirs(const LogManager& m, std::ostream& out) {
  for (const LogDirReport& d : m.report().log_dirs) {
    out << "  " << d.path << "  " << DirState(d, m.report()) << "\n";
    if (!d.marker_why.empty()) out << "      .kafka_cleanshutdown: " << MarkerLine(d) << "\n";
    auto w = m.dir_warnings().find(d.path);
    if (w == m.dir_warnings().end()) continue;
    for (const std::string& warning : w->second) out << "      warning: " << warning << "\n";
  }
}

void PrintPartition(const PartitionRecoveryReport& p, std::ostream& out) {
  std::vector<std::string> what;
  if (p.truncated_bytes > 0) {
    what.push_back(
        fmt::format("truncated {} at offset {}", HumanBytes(p.truncated_bytes), p.log_end_offset));
  }
  int64_t quarantined = 0;
  int64_t zeros = 0;
  for (const auto& q : p.quarantined) (q.quarantine_path.empty() ? zeros : quarantined) += q.bytes;
  if (quarantined > 0) what.push_back("kept " + HumanBytes(quarantined) + " in quarantine");
  if (zeros > 0) what.push_back("dropped " + HumanBytes(zeros) + " of preallocated zeros");
  if (!p.rebuilt_indexes.empty())
    what.push_back("rebuilt " + Plural(int64_t(p.rebuilt_indexes.size()), "index"));
  const int64_t leftovers = LeftoversRemoved(p);
  const int64_t removed = int64_t(p.deleted_files.size()) - leftovers;
  if (removed > 0) what.push_back("removed " + Plural(removed, "file"));
  if (leftovers > 0) what.push_back("removed " + Plural(leftovers, "leftover file"));
  std::string line = fmt::format("  {}-{}", p.topic, p.partition);
  if (p.errors.empty()) line += fmt::format("  LEO {}", p.log_end_offset);
  for (const std::string& w : what) line += ", " + w;
  out << line << "\n";
  for (const auto& q : p.quarantined) {
    if (!q.quarantine_path.empty()) {
      out << "      quarantined (" << DamageKindName(q.kind) << "): " << q.quarantine_path << "\n";
    }
  }
  for (const auto& e : p.errors) out << "      error: " << e << "\n";
  if (p.left_unchanged) out << "      not loaded: every file of it left exactly as it was found\n";
  for (const auto& w : p.warnings) out << "      " << w << "\n";
}

void PrintSummary(const LogManager& m, std::ostream& out) {
  const RecoveryReport& r = m.report();
  const RecoverTotals t = Sum(r);
  int64_t offline = 0;
  for (const auto& d : r.log_dirs) offline += d.offline ? 1 : 0;
  const std::string partitions =
      t.failed == 0 ? Plural(t.partitions, "partition")
                    : fmt::format("{} of {} partitions", t.partitions - t.failed, t.partitions);
  out << fmt::format("Recovered {} ({}) in {} in {} ms\n", partitions,
                     Plural(t.segments, "segment"), Plural(int64_t(r.log_dirs.size()), "log dir"),
                     r.duration_ms);
  PrintDirs(m, out);
  size_t shown = 0, noteworthy = 0;
  for (const auto& p : r.partitions) {
    if (!Noteworthy(p)) continue;
    if (noteworthy++ == 0) out << "Repairs and problems:\n";
    if (shown < kMaxPartitionLines) {
      PrintPartition(p, out);
      ++shown;
    }
  }
  if (noteworthy > shown) {
    out << fmt::format("  ... and {} more (see the report)\n", noteworthy - shown);
  }
  std::string scanned = "scanned " + HumanBytes(t.scanned);
  if (t.scanned >= (1 << 20) && r.duration_ms > 0) {
    scanned += fmt::format(" ({:.0f} MB/s)", double(t.scanned) / 1e3 / double(r.duration_ms));
  }
  if (t.changed == 0 && t.failed == 0 && offline == 0) {
    out << "Nothing changed; " << scanned << ".\n";
    return;
  }
  out << fmt::format(
      "Totals: {}, truncated {}, quarantined {}, rebuilt {}, {} offline, {} not loaded\n", scanned,
      HumanBytes(t.truncated), HumanBytes(t.quarantined), Plural(t.rebuilt, "index"),
      Plural(offline, "log dir"), Plural(t.failed, "partition"));
}

// The problems alone, for --quiet.
void PrintProblems(const LogManager& m, std::ostream& err) {
  for (const auto& d : m.report().log_dirs) {
    if (d.offline) err << "log dir " << d.path << " is offline: " << d.error << "\n";
  }
  for (const auto& p : m.report().partitions) {
    for (const auto& e : p.errors) err << p.topic << "-" << p.partition << ": " << e << "\n";
  }
}

// After a clean shutdown of every dir: the broker's crash-loop count is stale
// (the next start is a clean one), so it goes, as the broker's own clean
// shutdown removes it. Returns the files removed.
std::vector<std::string> ClearCrashLoopGuard(const ToolConfig& config, FileSystem* fs,
                                             std::ostream& err) {
  std::vector<std::string> removed;
  for (const std::string& dir : config.log_dirs) {
    const std::string path = JoinPath(dir, kCrashLoopGuardFileName);
    if (!fs->Exists(path)) continue;
    Status st = fs->Remove(path);
    if (st.ok()) st = fs->SyncDir(dir);
    if (!st.ok()) {
      err << "daruma recover: cannot clear the crash-loop guard: " << st.ToString() << "\n";
      continue;
    }
    removed.push_back(path);
  }
  return removed;
}

// `kafka`: the --kafka-config part of the report (null without it).
Status WriteReport(const LogManager& m, const nlohmann::json& kafka, const std::string& path) {
  nlohmann::json json = m.ReportJson();
  if (!kafka.is_null()) json["kafkaConfig"] = kafka;
  const std::string text =
      json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return FileSystem::Default()->WriteFileAtomically(path, AsBytes(text));
}

// --kafka-config: the broker's metadata log, and no Kafka broker on any dir.
Result<KafkaMetadataLog> CheckKafkaBroker(const ToolConfig& config) {
  KafkaMetadataLog metadata = FindMetadataLog(config.server, config.log_dirs);
  std::vector<std::string> dirs = config.log_dirs;
  if (!metadata.path.empty() && BaseName(metadata.path) != kMetadataPartitionDirName) {
    dirs.push_back(metadata.path);
  }
  DARUMA_RETURN_IF_ERROR(CheckNoKafkaBrokerRuns(dirs));
  return metadata;
}

void PrintKafkaConfig(const RecoverOptions& o, const ToolConfig& config,
                      const KafkaMetadataLog& metadata, std::ostream& out) {
  out << fmt::format(
      "Kafka broker config {}: {}, {} recovery thread(s) per dir, log.index.interval.bytes={}, "
      "log.index.size.max.bytes={}, log.segment.bytes={}\n",
      o.kafka_config_file, Plural(int64_t(config.log_dirs.size()), "log dir"),
      config.server.num_recovery_threads_per_data_dir, config.log.index_interval_bytes,
      config.log.segment_index_bytes, config.log.segment_bytes);
  if (!metadata.path.empty()) out << "  " << metadata.path << "  " << metadata.why << "\n";
}

}  // namespace

int RunRecover(const RecoverOptions& o, std::ostream& out, std::ostream& err) {
  Result<ToolConfig> config = ResolveConfig(o);
  if (!config.ok()) {
    err << "daruma recover: " << config.status().message() << "\n";
    return kExitUsage;
  }
  PrintConfigWarnings(config->server, "recover", err);
  nlohmann::json kafka;
  if (!o.kafka_config_file.empty()) {
    Result<KafkaMetadataLog> metadata = CheckKafkaBroker(*config);
    if (!metadata.ok()) {
      err << "daruma recover: " << metadata.status().message() << "; nothing was changed\n";
      return kExitUsage;
    }
    kafka = KafkaConfigJson(o.kafka_config_file, *metadata);
    if (!o.quiet) PrintKafkaConfig(o, *config, *metadata, out);
  }
  if (o.full && !o.quiet) {
    out << "Full rescan: every segment of every partition from its first, whatever the "
           "clean-shutdown marker and recovery points say\n";
  }
  FileSystem* fs = o.fs != nullptr ? o.fs : FileSystem::Default();
  LogManagerOptions manager_options;
  manager_options.fs = fs;
  manager_options.keep_clean_broker_epoch = true;
  manager_options.full_rescan = o.full;
  manager_options.quarantine = !o.no_quarantine;
  manager_options.max_open_files = size_t(config->server.max_open_files);
  // The process exits right after: the memory of the recovered logs, the
  // report and the dirs' bookkeeping of 10,000 partitions, freed object by
  // object, was a tenth of a clean recover; the kernel takes it back at exit
  // at once (clang's -disable-free). Under AddressSanitizer everything is
  // freed, so its leak check stays exact.
  const bool leave_memory_to_exit = o.exits_after && !kAddressSanitizer;
  manager_options.exits_after_shutdown = leave_memory_to_exit;
  auto owned = std::make_unique<LogManager>(manager_options);
  LogManager& manager = *owned;
  Status startup;
  {
    ProgressReporter progress([&manager] { return manager.Progress(); },
                              o.quiet ? ProgressMode::kQuiet : o.progress, err);
    progress.Start();
    startup = manager.Startup(config->log_dirs, config->log,
                              config->server.num_recovery_threads_per_data_dir);
  }
  if (!startup.ok()) {
    // Nothing ran: the dirs are as they were (a lock held by a broker, a
    // missing permission, ...).
    err << "daruma recover: " << startup.message() << "; nothing was changed\n";
    if (!o.report_file.empty()) (void)WriteReport(manager, kafka, o.report_file);
    return kExitUsage;
  }
  Status shutdown = manager.Shutdown();
  if (!shutdown.ok()) {
    err << "daruma recover: clean shutdown failed: " << shutdown.ToString() << "\n";
  }
  const bool healthy = shutdown.ok() && !manager.HasFailures();
  if (o.quiet) {
    PrintProblems(manager, err);
  } else {
    PrintSummary(manager, out);
  }
  if (healthy) {
    for (const std::string& f : ClearCrashLoopGuard(*config, fs, err)) {
      if (!o.quiet) out << "Cleared the crash-loop guard's count of unclean starts (" << f << ")\n";
    }
  }
  int rc = healthy ? kExitOk : kExitFailed;
  if (!o.report_file.empty()) {
    Status st = WriteReport(manager, kafka, o.report_file);
    if (!st.ok()) {
      err << "daruma recover: cannot write the report: " << st.ToString() << "\n";
      rc = kExitUsage;
    } else if (!o.quiet) {
      out << "Report written to " << o.report_file << "\n";
    }
  }
  // Shutdown has closed every log and stopped every thread: the destructors
  // would only free memory.
  if (leave_memory_to_exit) (void)owned.release();
  return rc;
}

}  // namespace daruma::tools
