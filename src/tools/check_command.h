// `daruma check`: verifies every segment of every partition of the given log
// dirs and changes nothing (issue 5). The verification is LogChecker's
// (recovery/log_checker.h): the start-up loader run on a copy-on-write overlay
// from offset 0, plus index, time index, .txnindex, leader-epoch, checkpoint
// and stray-file checks.
//
// Contract: never writes, renames, removes or locks anything under the log
// dirs (safe on a live broker's dirs); pages it reads are dropped from the
// page cache. Only --json FILE is written, and only where the operator says.
// Configuration: --config/--set/--log-dirs as in tools/tool_config.h (every
// log dir must exist); the log settings (index.interval.bytes,
// producer.id.expiration.ms, ...) are the ones the checked broker uses.
// Progress (stderr, not with --quiet): bytes scanned of the dirs' `.log`
// bytes, bytes/s and ETA (recovery/progress_reporter.h).
// Output: one line per problem ("<file> at byte <p>, offset <o>: <what> --
// <action>") and a summary on `out`; --quiet prints the problem lines only
// (on `err`).
// Exit codes (the rule of every subcommand, tools/cli.h): 0 clean, 1 problems
// found, 2 usage, configuration or I/O error that kept the check from
// finishing (a missing log dir, an unknown --set key, an unreadable dir, the
// --json file not written); then no summary is printed.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "recovery/progress_reporter.h"

namespace daruma::tools {

struct CheckCommandOptions {
  std::vector<std::string> log_dirs;   // --log-dirs, comma-separated (over log.dirs)
  std::string config_file;             // --config: a server.properties (tools/tool_config.h)
  std::vector<std::string> overrides;  // --set key=value, in order
  int threads = 1;                     // --threads: partitions in parallel, 2 threads each
  std::string json_file;               // --json FILE; "" = none
  bool quiet = false;                  // --quiet: problems only
  ProgressMode progress = ProgressMode::kPlain;
};

int RunCheck(const CheckCommandOptions& options, std::ostream& out, std::ostream& err);

}  // namespace daruma::tools
