// The `daruma` command line: subcommand registration and dispatch.
//
// The tools layer registers its own subcommands (dump, recover, check,
// repair). Layers beside it (the broker's `serve`) pass theirs in from
// src/main.cc, so tools never depends on the broker.
//
// One exit-code rule for every subcommand (README "Commands", each --help):
//   0  success: the command did its job and the data is healthy afterwards
//      (recover and repair: whatever they fixed included);
//   1  the command ran and found or left problems (check found some, dump
//      read a corrupt file, recover could not load a partition, repair
//      refused or only planned, serve failed or did not shut down cleanly);
//   2  the command could not run: usage, configuration (an unknown --set key,
//      a bad value), an input that is missing or of the wrong kind, an I/O
//      error that stopped it, or a report file it could not write. The reason
//      is one line on stderr; nothing on disk was changed.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace daruma::tools {

inline constexpr int kExitSuccess = 0;
inline constexpr int kExitProblems = 1;
inline constexpr int kExitCannotRun = 2;

// Adds one subcommand to `app`. Its callback stores the exit code in `*rc`.
using SubcommandRegistrar = std::function<void(CLI::App& app, int* rc)>;

// What `daruma --version` prints, e.g. "daruma 0.1.0 (commit 58bf175,
// RelWithDebInfo build)".
struct BuildInfo {
  std::string version = "unknown";
  std::string commit = "unknown";
  std::string build_type = "unknown";
};

// Parses argv, runs the chosen subcommand, returns the process exit code.
int RunCli(int argc, char** argv, const std::vector<SubcommandRegistrar>& extra = {},
           const BuildInfo& build = {});

}  // namespace daruma::tools
