// `daruma recover`: exactly the start-up recovery a broker performs on its log
// dirs (LogManager::Startup), then a clean shutdown, a short human summary on
// `out` and the JSON recovery report (issue 4 schema) in --report FILE.
//
// Configuration: --config reads a server.properties file (Kafka property
// names), each --set key=value overrides one property, --log-dirs overrides
// log.dirs, --threads overrides num.recovery.threads.per.data.dir.
// --kafka-config reads a Kafka broker's own file the same way and treats the
// dirs as that broker's (tools/kafka_broker_config.h): its KRaft metadata log
// is named and left untouched, and a dir the broker still holds is refused.
// --full recovers every segment of every partition from its first, whatever
// the marker and recovery points say.
// The clean-shutdown marker each dir gets back follows
// recovery/clean_shutdown_marker_rule.h: the input's broker epoch when the
// start was clean and nothing changed, else -1; the summary and the report
// (logDirs[].marker) say which and why.
// Every log dir must exist (tools/tool_config.h): recover never creates one.
// The summary says per dir what happened: empty, clean shutdown with nothing
// changed, or unclean shutdown with the partitions recovered, indexes
// rebuilt, bytes truncated and quarantined. After a clean shutdown of every
// dir the broker's crash-loop guard file (.daruma_unclean_starts) is removed,
// as the broker's own clean shutdown does, and the summary says so.
// Exit codes (the rule of every subcommand, tools/cli.h): 0 every partition
// loaded and shut down cleanly, repairs included; 1 a dir went offline, a
// partition could not be loaded or the clean shutdown failed; 2 usage,
// configuration or I/O error that kept recovery from running (a missing dir,
// an unknown --set key, a dir locked by a broker: nothing was changed), or
// the report could not be written.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "recovery/progress_reporter.h"

namespace daruma::tools {

struct RecoverOptions {
  std::vector<std::string> log_dirs;   // --log-dirs, comma-separated
  std::string config_file;             // --config
  std::string kafka_config_file;       // --kafka-config (excludes --config)
  bool full = false;                   // --full: rescan every segment
  std::vector<std::string> overrides;  // --set key=value, in order
  int threads = 0;                     // --threads; 0 = from the configuration
  std::string report_file;             // --report; "" = no report file
  bool no_quarantine = false;          // --no-quarantine
  bool quiet = false;                  // --quiet: no progress, no summary (problems still shown)
  ProgressMode progress = ProgressMode::kPlain;  // chosen by the caller (TTY or not)
  // The file system the log dirs are recovered on; null = the real one. Tests
  // inject faults here (locks and the report file stay on the real one).
  FileSystem* fs = nullptr;
  // The process exits right after (the command line): the report and the
  // dirs' bookkeeping left after the shutdown are not freed object by object.
  bool exits_after = false;
};

int RunRecover(const RecoverOptions& options, std::ostream& out, std::ostream& err);

}  // namespace daruma::tools
