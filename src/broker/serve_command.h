// `daruma serve --config FILE [--set key=value]... [--clear-crash-loop]`: runs
// the broker (broker.h) until SIGTERM/SIGINT.
//
// Exit codes: 0 after a clean shutdown; 1 when the broker could not start,
// refused to (crash-loop guard), or failed to shut down cleanly; 2 for usage
// and configuration errors (nothing on disk was touched).
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
