#include "tools/cli.h"

#include <cstdio>

namespace daruma::tools {

int RunCli(int, char**) {
  std::fprintf(stderr, "daruma: not yet implemented\n");
  return 2;
}

}  // namespace daruma::tools
