// libFuzzer target: `daruma dump` on a hostile `.log` file. The input is
// written to a scratch file and dumped with deep iteration and data printing,
// in text and JSON form; the output is discarded. Any crash, sanitizer report
// or exit code outside {0, 1} (2 would mean an I/O error on our own scratch
// file) is a finding.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "tools/dump_command.h"

namespace {

const std::string& ScratchPath() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    std::string base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : (dir && *dir ? dir : "/tmp");
    return base + "/daruma-dump-fuzz-" + std::to_string(getpid()) + "-00000000000000000000.log";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = ScratchPath();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) std::abort();
  if (size && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  for (bool json : {false, true}) {
    daruma::tools::DumpOptions options;
    options.files = {path};
    options.deep_iteration = true;
    options.print_data_log = true;
    options.json = json;
    std::ostringstream out, err;
    int rc = daruma::tools::RunDump(options, out, err);
    if (rc != 0 && rc != 1) std::abort();
  }
  return 0;
}
