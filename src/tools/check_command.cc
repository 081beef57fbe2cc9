#include "tools/check_command.h"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <nlohmann/json.hpp>
#include <ostream>

#include "common/bytes.h"
#include "common/file_system.h"
#include "recovery/log_checker.h"
#include "recovery/topic_config_check.h"
#include "tools/tool_config.h"

namespace daruma::tools {
namespace {

constexpr int kExitClean = 0;
constexpr int kExitProblems = 1;
constexpr int kExitError = 2;

void PrintProblems(const LogDirCheck& d, std::ostream& out) {
  for (const CheckProblem& p : d.problems) out << p.ToString() << "\n";
  for (const PartitionCheck& p : d.partitions) {
    for (const CheckProblem& q : p.problems) out << q.ToString() << "\n";
  }
}

struct Totals {
  int64_t partitions = 0, segments = 0, scanned = 0, problems = 0;
};

Totals Sum(const std::vector<LogDirCheck>& dirs) {
  Totals t;
  for (const LogDirCheck& d : dirs) {
    t.problems += int64_t(d.problems.size());
    for (const PartitionCheck& p : d.partitions) {
      ++t.partitions;
      // Every segment read, also those after damage the plan would drop.
      t.segments += std::max(p.segment_files, int64_t(p.plan.segments.size()));
      t.scanned += p.plan.scanned_bytes;
      t.problems += int64_t(p.problems.size());
    }
  }
  return t;
}

}  // namespace

int RunCheck(const CheckCommandOptions& o, std::ostream& out, std::ostream& err) {
  if (o.threads < 1) {
    err << "daruma check: --threads: must be at least 1\n";
    return kExitError;
  }
  Result<ToolConfig> config = ResolveToolConfig(o.log_dirs, o.config_file, o.overrides);
  if (!config.ok()) {
    err << "daruma check: " << config.status().message() << "\n";
    return kExitError;
  }
  PrintConfigWarnings(config->server, "check", err);
  FileSystem* fs = FileSystem::Default();
  std::atomic<int64_t> scanned{0};
  const CheckWork work = EstimateCheckWork(fs, config->log_dirs);
  std::atomic<int64_t> remaining{work.partitions};
  daruma::CheckOptions co;
  co.fs = fs;
  co.config = config->log;
  co.threads = o.threads;
  co.scanned_bytes = &scanned;
  co.remaining_partitions = &remaining;
  std::vector<LogDirCheck> dirs;
  int rc = kExitClean;
  {
    ProgressReporter progress(
        [&] {
          return ProgressSnapshot{scanned.load(), work.bytes, remaining.load(), work.partitions};
        },
        o.quiet ? ProgressMode::kQuiet : o.progress, err, kCheckProgressLabel);
    progress.Start();
    for (const std::string& dir : config->log_dirs) {
      Result<LogDirCheck> d = CheckLogDir(dir, co);
      if (!d.ok()) {
        err << "daruma check: log dir " << dir << ": " << d.status().message() << "\n";
        rc = kExitError;
        break;
      }
      dirs.push_back(std::move(*d));
    }
    remaining.store(0);
  }
  // A dir that could not be read leaves the check incomplete: a summary of
  // the rest would read as "no problems".
  if (rc == kExitError) return rc;
  CheckTopicConfigTopics(&dirs);
  CheckDirsAgree(&dirs);
  const Totals t = Sum(dirs);
  for (const LogDirCheck& d : dirs) PrintProblems(d, o.quiet ? err : out);
  if (rc == kExitClean && t.problems > 0) rc = kExitProblems;
  if (!o.quiet) {
    for (const LogDirCheck& d : dirs) {
      for (const std::string& note : d.notes) out << "note: " << note << "\n";
    }
    out << fmt::format(
        "Checked {} partitions ({} segments, {}) in {} log dir{}: {}\n", t.partitions, t.segments,
        HumanBytes(t.scanned), dirs.size(), dirs.size() == 1 ? "" : "s",
        t.problems == 0 ? std::string("no problems")
                        : fmt::format("{} problem{}", t.problems, t.problems == 1 ? "" : "s"));
  }
  if (!o.json_file.empty()) {
    nlohmann::json j = {{"logDirs", nlohmann::json::array()}, {"problems", t.problems}};
    for (const LogDirCheck& d : dirs) j["logDirs"].push_back(ToJson(d));
    const std::string text = j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    Status st = fs->WriteFileAtomically(o.json_file, AsBytes(text));
    if (!st.ok()) {
      err << "daruma check: cannot write the report: " << st.ToString() << "\n";
      rc = kExitError;
    }
  }
  return rc;
}

}  // namespace daruma::tools
