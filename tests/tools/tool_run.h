// Runs `daruma check` / `daruma repair` / `daruma recover` in-process the way the tests need
// them: quiet, output captured, the JSON report (when one is asked for) parsed
// and its file removed. One place for every tools test.
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "recovery/quarantine.h"
#include "support/test_support.h"
#include "tools/check_command.h"
#include "tools/recover_command.h"
#include "tools/repair_command.h"

namespace daruma::tools::testlog {

struct ToolRun {
  int rc = -1;
  std::string out, err;
  nlohmann::json json;  // the check's --json or the repair's --report; null if none
};

inline nlohmann::json TakeJsonFile(const std::string& path) {
  if (path.empty() || !std::filesystem::exists(path)) return nullptr;
  nlohmann::json json = nlohmann::json::parse(daruma::testing::ReadFileToString(path));
  std::filesystem::remove(path);
  return json;
}

inline ToolRun RunCheckQuietly(CheckCommandOptions o) {
  o.progress = ProgressMode::kQuiet;
  std::ostringstream out, err;
  ToolRun run;
  run.rc = RunCheck(o, out, err);
  run.out = out.str();
  run.err = err.str();
  run.json = TakeJsonFile(o.json_file);
  return run;
}

inline ToolRun RunRepairQuietly(RepairCommandOptions o) {
  o.progress = ProgressMode::kQuiet;
  std::ostringstream out, err;
  ToolRun run;
  run.rc = RunRepair(o, out, err);
  run.out = out.str();
  run.err = err.str();
  run.json = TakeJsonFile(o.report_file);
  return run;
}

inline ToolRun RunRecoverQuietly(RecoverOptions o) {
  o.progress = ProgressMode::kQuiet;
  std::ostringstream out, err;
  ToolRun run;
  run.rc = RunRecover(o, out, err);
  run.out = out.str();
  run.err = err.str();
  run.json = TakeJsonFile(o.report_file);
  return run;
}

// The lines of the quarantine manifest of `partition_dir` (none if absent).
inline std::vector<nlohmann::json> ReadQuarantineManifest(const std::string& partition_dir) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(partition_dir + "/" + kQuarantineDirName + "/" + kQuarantineManifestName);
  std::string line;
  while (std::getline(in, line)) lines.push_back(nlohmann::json::parse(line));
  return lines;
}

}  // namespace daruma::tools::testlog
