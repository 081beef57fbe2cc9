// daruma: one binary, several subcommands (dump, recover, check, repair, serve).
#include "tools/cli.h"

int main(int argc, char** argv) {
  return daruma::tools::RunCli(argc, argv);
}
