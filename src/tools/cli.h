// The `daruma` command line: subcommand registration and dispatch.
//
// The tools layer registers its own subcommands (dump, recover, check,
// repair). Layers beside it (the broker's `serve`) pass theirs in from
// src/main.cc, so tools never depends on the broker.
#pragma once

#include <functional>
#include <vector>

namespace CLI {
class App;
}

namespace daruma::tools {

// Adds one subcommand to `app`. Its callback stores the exit code in `*rc`.
using SubcommandRegistrar = std::function<void(CLI::App& app, int* rc)>;

// Parses argv, runs the chosen subcommand, returns the process exit code.
int RunCli(int argc, char** argv, const std::vector<SubcommandRegistrar>& extra = {});

}  // namespace daruma::tools
