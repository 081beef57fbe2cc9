#include "tools/repair_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "common/bytes.h"
#include "common/file_system.h"
#include "recovery/log_checker.h"
#include "recovery/log_repairer.h"
#include "recovery/salvage_plan.h"
#include "recovery/topic_config_check.h"
#include "tools/tool_config.h"

namespace daruma::tools {
namespace {

constexpr int kRepairExitOk = 0;
constexpr int kExitRefused = 1;
constexpr int kRepairExitError = 2;

// Problems only an operator can fix are marked; repair leaves them.
std::string Line(const CheckProblem& p) {
  return (p.operator_only ? "[left for an operator] " : "") + p.ToString();
}

int64_t OperatorOnlyCount(const std::vector<LogDirCheck>& dirs) {
  int64_t n = 0;
  auto count = [&](const std::vector<CheckProblem>& ps) {
    for (const CheckProblem& p : ps) n += p.operator_only ? 1 : 0;
  };
  for (const LogDirCheck& d : dirs) {
    count(d.problems);
    for (const PartitionCheck& p : d.partitions) count(p.problems);
  }
  return n;
}

// With --salvage: per log dir, per partition of its plan, what salvage
// would do (nullopt: nothing to salvage there).
using SalvagePlans = std::vector<std::vector<std::optional<PartitionSalvage>>>;

const PartitionSalvage* SalvageOf(const SalvagePlans& s, size_t dir, size_t partition) {
  if (dir >= s.size() || partition >= s[dir].size() || !s[dir][partition]) return nullptr;
  return &*s[dir][partition];
}

// What the plan's file changes are, by kind ("25 file changes: 9 removed,
// ..."); the JSON report lists each one.
std::string DescribeChanges(const std::vector<PlannedChange>& changes) {
  if (changes.empty()) return "no file changes";
  std::map<PlannedChange::Kind, int64_t> by_kind;
  for (const PlannedChange& c : changes) ++by_kind[c.kind];
  auto name = [](PlannedChange::Kind k) -> std::string_view {
    switch (k) {
      case PlannedChange::Kind::kCreate:
        return "created";
      case PlannedChange::Kind::kWrite:
        return "writes";
      case PlannedChange::Kind::kTruncate:
        return "truncated";
      case PlannedChange::Kind::kRename:
        return "renamed (set aside or swapped in)";
      case PlannedChange::Kind::kRemove:
        return "removed";
      case PlannedChange::Kind::kRemoveAll:
        return "dirs removed";
      case PlannedChange::Kind::kCreateDir:
        return "dirs created";
      case PlannedChange::Kind::kSetModTime:
        return "times set";
    }
    return "other";
  };
  std::string out = fmt::format("{} file changes (", changes.size());
  bool first = true;
  for (const auto& [kind, n] : by_kind) {
    out += fmt::format("{}{} {}", first ? "" : ", ", n, name(kind));
    first = false;
  }
  return out + "; --report lists each)";
}

// Salvage rewrites the segments with dropped ranges and sets aside those it
// drops whole; the indexes of what it rewrites are rebuilt by the load after.
std::string DescribeSalvageChanges(const PartitionSalvage& s) {
  int64_t rewritten = 0, set_aside = 0;
  for (const SegmentSalvage& seg : s.segments) {
    if (seg.drop_whole) {
      ++set_aside;
    } else if (seg.changed()) {
      ++rewritten;
    }
  }
  return fmt::format(
      "salvage rewrites {} segment(s) without the dropped ranges{} and rebuilds their indexes",
      rewritten, set_aside > 0 ? fmt::format(" and sets {} aside whole", set_aside) : "");
}

void PrintPlan(const std::vector<LogDirCheck>& dirs, const SalvagePlans& salvage,
               std::ostream& out) {
  for (size_t i = 0; i < dirs.size(); ++i) {
    const LogDirCheck& d = dirs[i];
    if (!d.HasProblems()) continue;
    out << d.path << ":\n";
    for (const CheckProblem& p : d.problems) out << "  " << Line(p) << "\n";
    for (size_t j = 0; j < d.partitions.size(); ++j) {
      const PartitionCheck& p = d.partitions[j];
      if (p.problems.empty()) continue;
      const PartitionSalvage* s = SalvageOf(salvage, i, j);
      out << fmt::format("  {}: drop {} bytes of segment data, LEO {} after repair, {}\n",
                         p.tp.ToString(), p.data_bytes_dropped,
                         s != nullptr ? s->log_end_offset : p.plan.log_end_offset,
                         s != nullptr ? DescribeSalvageChanges(*s) : DescribeChanges(p.changes));
      if (s != nullptr) {
        out << "    what recovery finds (without --salvage, repair truncates at the first "
               "damage; with it, only the ranges under salvage below are dropped):\n";
      }
      for (const CheckProblem& q : p.problems) out << "    " << Line(q) << "\n";
      if (s != nullptr) out << DescribeSalvage(*s, "    ");
    }
  }
}

// Plans salvage for every partition with problems, and makes the plan count
// the bytes salvage drops (instead of the truncation's) against
// --max-corrupt-bytes.
Result<SalvagePlans> PlanSalvages(std::vector<LogDirCheck>* dirs) {
  SalvagePlans plans(dirs->size());
  for (size_t i = 0; i < dirs->size(); ++i) {
    LogDirCheck& d = (*dirs)[i];
    plans[i].resize(d.partitions.size());
    for (size_t j = 0; j < d.partitions.size(); ++j) {
      PartitionCheck& p = d.partitions[j];
      if (p.problems.empty() || p.load_failed) continue;
      Result<PartitionSalvage> s = PlanSalvage(FileSystem::Default(), p.dir);
      if (!s.ok()) return s.status().WithContext("salvage plan of " + p.dir);
      if (!s->changed()) continue;
      p.data_bytes_dropped = s->dropped_bytes;
      // A checkpoint entry above the truncation's log end is no problem for
      // salvage, which keeps the log end: salvage leaves those files alone.
      const int64_t salvaged_end = s->log_end_offset;
      std::erase_if(d.problems, [&](const CheckProblem& q) {
        return q.kind == DamageKind::kCorruptCheckpoint && q.partition == p.tp && q.offset &&
               *q.offset <= salvaged_end;
      });
      plans[i][j] = std::move(*s);
    }
  }
  return plans;
}

nlohmann::json SalvageJson(const std::vector<LogDirCheck>& plan, const SalvagePlans& planned,
                           const std::vector<AppliedRepair>& applied) {
  nlohmann::json parts = nlohmann::json::array();
  auto add = [&](const LogDirCheck& d, size_t j, const PartitionSalvage& s) {
    nlohmann::json j_s = ToJson(s);
    j_s["topic"] = d.partitions[j].tp.topic;
    j_s["partition"] = d.partitions[j].tp.partition;
    parts.push_back(std::move(j_s));
  };
  if (applied.empty()) {
    for (size_t i = 0; i < plan.size(); ++i) {
      for (size_t j = 0; j < plan[i].partitions.size(); ++j) {
        if (const PartitionSalvage* s = SalvageOf(planned, i, j)) add(plan[i], j, *s);
      }
    }
  } else {
    for (const AppliedRepair& a : applied) {
      auto dir = std::find_if(plan.begin(), plan.end(),
                              [&](const LogDirCheck& d) { return d.path == a.path; });
      if (dir == plan.end()) continue;
      for (size_t j = 0; j < a.salvaged.size() && j < dir->partitions.size(); ++j) {
        if (a.salvaged[j]) add(*dir, j, *a.salvaged[j]);
      }
    }
  }
  return {{"applied", !applied.empty()}, {"partitions", parts}};
}

Status WriteReport(const std::string& path, const std::vector<LogDirCheck>& plan,
                   const std::vector<AppliedRepair>& applied, const RepairCommandOptions& o,
                   const SalvagePlans& salvage, const std::string& refusal) {
  nlohmann::json j = {{"dryRun", o.dry_run}, {"plan", nlohmann::json::array()}};
  for (const LogDirCheck& d : plan) j["plan"].push_back(ToJson(d));
  if (o.salvage) j["salvage"] = SalvageJson(plan, salvage, applied);
  if (!refusal.empty()) j["refused"] = refusal;
  if (!applied.empty()) {
    RecoveryReport r;
    for (size_t i = 0; i < applied.size(); ++i) {  // one entry per repaired dir
      r.log_dirs.push_back({applied[i].path, applied[i].had_marker, std::nullopt, false, ""});
      for (const auto& p : applied[i].partitions) r.partitions.push_back(p);
    }
    j["applied"] = r.ToJson();
  }
  const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  return FileSystem::Default()->WriteFileAtomically(path, AsBytes(text));
}

Result<std::vector<LogDirCheck>> Plan(const RepairCommandOptions& o, const ToolConfig& config,
                                      std::ostream& err) {
  std::atomic<int64_t> scanned{0};
  const CheckWork work = EstimateCheckWork(FileSystem::Default(), config.log_dirs);
  std::atomic<int64_t> remaining{work.partitions};
  daruma::CheckOptions co;
  co.config = config.log;
  co.threads = o.threads;
  co.scanned_bytes = &scanned;
  co.remaining_partitions = &remaining;
  ProgressReporter progress(
      [&] {
        return ProgressSnapshot{scanned.load(), work.bytes, remaining.load(), work.partitions};
      },
      o.quiet ? ProgressMode::kQuiet : o.progress, err, kRepairProgressLabel);
  progress.Start();
  std::vector<LogDirCheck> dirs;
  for (const std::string& dir : config.log_dirs) {
    Result<LogDirCheck> d = CheckLogDir(dir, co);
    if (!d.ok()) return d.status().WithContext("log dir " + dir);
    dirs.push_back(std::move(*d));
  }
  remaining.store(0);
  CheckTopicConfigTopics(&dirs);
  CheckDirsAgree(&dirs);
  return dirs;
}

// Applies the plan dir by dir; stops at the first failure (rc 1).
int Apply(const std::vector<LogDirCheck>& plan, const RepairCommandOptions& o,
          const ToolConfig& config, std::vector<AppliedRepair>* applied, std::ostream& out,
          std::ostream& err) {
  RepairApplyOptions ro;
  ro.config = config.log;
  ro.threads = o.threads;
  ro.salvage = o.salvage;
  for (const LogDirCheck& d : plan) {
    if (!d.HasRepairableProblems()) continue;
    applied->emplace_back();
    Status st = ApplyRepair(d, ro, &applied->back());
    if (!st.ok()) {
      err << "daruma repair: " << d.path << ": " << st.ToString() << "\n";
      applied->pop_back();
      return kExitRefused;
    }
    const AppliedRepair& a = applied->back();
    for (size_t j = 0; j < a.salvaged.size(); ++j) {
      if (!a.salvaged[j]) continue;
      const PartitionSalvage& s = *a.salvaged[j];
      std::string gaps;
      for (const OffsetGap& g : s.gaps) gaps += fmt::format(" [{}, {}]", g.first, g.last);
      out << fmt::format(
          "{}: salvaged: dropped {} bytes, kept {} batches ({} bytes) after the damage, LEO {}, "
          "offset gaps:{}\n",
          d.partitions[j].tp.ToString(), s.dropped_bytes, s.kept_batches_after_damage,
          s.kept_bytes_after_damage, s.log_end_offset, gaps.empty() ? " none" : gaps);
      for (const std::string& w : s.warnings) {
        err << "daruma repair: " << d.partitions[j].tp.ToString() << ": " << w << "\n";
      }
    }
    if (a.cleared_scrub_findings > 0) {
      out << fmt::format("{}: cleared {} scrub finding(s) of the repaired partitions\n", d.path,
                         a.cleared_scrub_findings);
    }
    for (const std::string& f : applied->back().set_aside) {
      err << "daruma repair: set aside " << f << " (the dir's topic overrides are gone; "
          << "restore them by hand)\n";
    }
  }
  return kRepairExitOk;
}

}  // namespace

int RunRepair(const RepairCommandOptions& o, std::ostream& stdout_stream, std::ostream& err) {
  // --quiet: what would go to stdout is kept, and shown on stderr only if
  // the run does not end in success.
  std::ostringstream held;
  std::ostream& out = o.quiet ? held : stdout_stream;
  if (o.threads < 1) {
    err << "daruma repair: --threads: must be at least 1\n";
    return kRepairExitError;
  }
  if (o.max_corrupt_bytes < -1) {
    err << "daruma repair: --max-corrupt-bytes: must be -1 (no limit) or a byte count of at least "
           "0\n";
    return kRepairExitError;
  }
  Result<ToolConfig> config = ResolveToolConfig(o.log_dirs, o.config_file, o.overrides);
  if (!config.ok()) {
    err << "daruma repair: " << config.status().message() << "\n";
    return kRepairExitError;
  }
  PrintConfigWarnings(config->server, "repair", err);
  Result<std::vector<LogDirCheck>> plan = Plan(o, *config, err);
  if (!plan.ok()) {
    err << "daruma repair: " << plan.status().message() << "; nothing was changed\n";
    return kRepairExitError;
  }
  SalvagePlans salvage;
  if (o.salvage) {
    Result<SalvagePlans> s = PlanSalvages(&*plan);
    if (!s.ok()) {
      err << "daruma repair: " << s.status().message() << "; nothing was changed\n";
      return kRepairExitError;
    }
    salvage = std::move(*s);
  }
  bool needed = false;
  for (const LogDirCheck& d : *plan) needed = needed || d.HasRepairableProblems();
  const int64_t operator_only = OperatorOnlyCount(*plan);
  std::string refusal = needed ? RepairRefusal(*plan, o.max_corrupt_bytes) : "";
  std::vector<AppliedRepair> applied;
  int rc = kRepairExitOk;
  if (!needed && operator_only == 0) {
    out << "Nothing to repair.\n";
  } else if (!needed) {
    out << "Nothing repair can fix; left for an operator:\n";
    PrintPlan(*plan, salvage, out);
  } else {
    out << (o.dry_run ? "Repair plan (dry run, nothing is changed):\n" : "Repair plan:\n");
    PrintPlan(*plan, salvage, out);
    if (!refusal.empty()) {
      err << "daruma repair: refused, nothing was changed: " << refusal << "\n";
      rc = kExitRefused;
    } else if (o.dry_run) {
      out << "Dry run: nothing was changed.\n";
      rc = kExitRefused;
    } else {
      rc = Apply(*plan, o, *config, &applied, out, err);
      if (rc == kRepairExitOk)
        out << "Repaired; the dropped bytes are in each partition's daruma-quarantine/.\n";
    }
  }
  if (operator_only > 0) {
    err << fmt::format(
        "daruma repair: {} problems are left for an operator (marked above; repair never "
        "changes them)\n",
        operator_only);
    if (rc == kRepairExitOk) rc = kExitRefused;
  }
  if (!o.report_file.empty()) {
    Status st = WriteReport(o.report_file, *plan, applied, o, salvage, refusal);
    if (!st.ok()) {
      err << "daruma repair: cannot write the report: " << st.ToString() << "\n";
      rc = kRepairExitError;
    }
  }
  if (o.quiet && rc != kRepairExitOk) err << held.str();
  return rc;
}

}  // namespace daruma::tools
