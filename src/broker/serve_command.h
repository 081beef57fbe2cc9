// `daruma serve --config FILE [--set key=value]... [--clear-crash-loop]`: runs
// the broker (broker.h) until SIGTERM/SIGINT.
//
// Exit codes (the rule of every subcommand, tools/cli.h): 0 after a clean
// shutdown; 1 when the broker could not start, refused to (crash-loop
// guard), or failed to shut down cleanly; 2 for usage and configuration
// errors, an unknown --set key or a log dir that is not a directory included
// (nothing was started). A missing log dir is created, parents too, as Kafka
// does. Unknown keys in the --config file are warnings on stderr.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace daruma::broker {

struct ServeOptions {
  std::string config_file;
  std::vector<std::string> overrides;  // "key=value", later ones win
  bool clear_crash_loop = false;       // reset the crash-loop guard, then start
};

int RunServe(const ServeOptions& options, std::ostream& err);

// Registers `serve` on the daruma command line (see tools/cli.h).
void AddServeCommand(CLI::App& app, int* rc);

}  // namespace daruma::broker
