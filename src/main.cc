// daruma: one binary, several subcommands (dump, recover, check, repair, serve).
// The tools layer owns the command line; the broker's `serve` is passed in
// here because tools and broker are siblings that never include each other.
// DARUMA_VERSION, DARUMA_GIT_COMMIT and DARUMA_BUILD_TYPE come from CMake
// (configure time) for `daruma --version`.
#include "broker/serve_command.h"
#include "common/allocator_tuning.h"
#include "tools/cli.h"

int main(int argc, char** argv) {
  daruma::TuneAllocator();
  const daruma::tools::BuildInfo build{DARUMA_VERSION, DARUMA_GIT_COMMIT, DARUMA_BUILD_TYPE};
  return daruma::tools::RunCli(argc, argv, {daruma::broker::AddServeCommand}, build);
}
