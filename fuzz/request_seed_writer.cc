// Writes the seed corpus of request_decoder_fuzz into <dir>: for every message
// with a schema at every version of its schema, the default struct and a
// filled one (protocol/generated/samples.h), each as one frame behind the
// request header of its key and version, one file per frame named after it
// ("produce_request_v7_filled"). Generated from the schemas at build time, so
// a new schema gets seeds with no edit, and no captured traffic is copied
// into the repository. <dir> must exist; other files in it are left alone.
//
// Usage: request_seed_writer <dir>
#include <cstdio>
#include <string>

#include "common/file_system.h"
#include "protocol/generated/samples.h"

int main(int argc, char** argv) {
  using namespace daruma;
  if (argc != 2) {
    std::fprintf(stderr, "usage: request_seed_writer <dir>\n");
    return 2;
  }
  FileSystem* fs = FileSystem::Default();
  const std::string dir = argv[1];
  int written = 0;
  for (const MessageSample& sample : MessageSamples()) {
    const std::string path = dir + "/" + sample.Name();
    auto file = fs->Open(path, OpenMode::kTruncate);
    Status s = file.ok() ? (*file)->WriteAt(0, SampleFrame(sample)) : file.status();
    if (!s.ok()) {
      std::fprintf(stderr, "request_seed_writer: %s: %s\n", path.c_str(), s.ToString().c_str());
      return 2;
    }
    ++written;
  }
  std::fprintf(stderr, "seed_corpus: request_decoder_fuzz: %d frames generated\n", written);
  return 0;
}
