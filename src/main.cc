// daruma: one binary, several subcommands (dump, recover, check, repair, serve).
// The tools layer owns the command line; the broker's `serve` is passed in
// here because tools and broker are siblings that never include each other.
#include "broker/serve_command.h"
#include "tools/cli.h"

int main(int argc, char** argv) {
  return daruma::tools::RunCli(argc, argv, {daruma::broker::AddServeCommand});
}
