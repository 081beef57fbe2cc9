// `daruma recover`: exactly the start-up recovery a broker performs on its log
// dirs (LogManager::Startup), then a clean shutdown, a short human summary on
// `out` and the JSON recovery report (issue 4 schema) in --report FILE.
//
// Configuration: --config reads a server.properties file (Kafka property
// names), each --set key=value overrides one property, --log-dirs overrides
// log.dirs, --threads overrides num.recovery.threads.per.data.dir.
// Exit codes: 0 recovered (possibly with repairs), 1 a dir went offline, a
// partition could not be loaded or start-up failed (e.g. a dir is locked),
// 2 usage or configuration error.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "recovery/progress_reporter.h"

namespace daruma::tools {

struct RecoverOptions {
  std::vector<std::string> log_dirs;   // --log-dirs, comma-separated
  std::string config_file;             // --config
  std::vector<std::string> overrides;  // --set key=value, in order
  int threads = 0;                     // --threads; 0 = from the configuration
  std::string report_file;             // --report; "" = no report file
  bool no_quarantine = false;          // --no-quarantine
  bool quiet = false;                  // --quiet: no progress, no summary (problems still shown)
  ProgressMode progress = ProgressMode::kPlain;  // chosen by the caller (TTY or not)
};

int RunRecover(const RecoverOptions& options, std::ostream& out, std::ostream& err);

}  // namespace daruma::tools
