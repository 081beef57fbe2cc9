// `daruma check`: verifies every segment of every partition of the given log
// dirs and changes nothing (issue 5). The verification is LogChecker's
// (recovery/log_checker.h): the start-up loader run on a copy-on-write overlay
// from offset 0, plus index, time index, .txnindex, leader-epoch, checkpoint
// and stray-file checks.
//
// Contract: never writes, renames, removes or locks anything under the log
// dirs (safe on a live broker's dirs); pages it reads are dropped from the
// page cache. Only --json FILE is written, and only where the operator says.
// Output: one line per problem ("<file> at byte <p>, offset <o>: <what> --
// <action>") and a summary on `out`; --quiet prints the problem lines only
// (on `err`).
// Exit codes: 0 clean, 1 problems found, 2 usage or I/O error.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "recovery/progress_reporter.h"

namespace daruma::tools {

struct CheckCommandOptions {
  std::vector<std::string> log_dirs;  // --log-dirs, comma-separated
  int threads = 1;                    // --threads: partitions checked in parallel
  std::string json_file;              // --json FILE; "" = none
  bool quiet = false;                 // --quiet: problems only
  ProgressMode progress = ProgressMode::kPlain;
};

int RunCheck(const CheckCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace daruma::tools
