// The `daruma` command line: subcommand registration and dispatch.
#pragma once

namespace daruma::tools {

// Parses argv, runs the chosen subcommand, returns the process exit code.
int RunCli(int argc, char** argv);

}  // namespace daruma::tools
