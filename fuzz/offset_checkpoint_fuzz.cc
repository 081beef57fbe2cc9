// libFuzzer target: the input is the text of an offset checkpoint file
// (recovery-point-offset-checkpoint, log-start-offset-checkpoint, ...; spec
// §9.1), parsed by OffsetCheckpointFile::Parse over checkpoint_text.
//
// Invariants checked (a violation aborts, i.e. is a finding):
//  * a failure is a Status whose message names the file;
//  * what parses re-serialises to text that parses to the same map, and that
//    serialisation is a fixed point (the written form is canonical);
//  * the text is canonical when it equals its own re-serialisation, and then
//    reading it from a real file gives the same map.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "log/offset_checkpoint_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace daruma;
  using namespace daruma::fuzz;
  const std::string path = "fuzz/recovery-point-offset-checkpoint";
  auto parsed = OffsetCheckpointFile::Parse(AsText(data, size), path);
  if (!parsed.ok()) {
    Check(parsed.status().message().find(path) != std::string::npos);
    return 0;
  }
  std::string text = OffsetCheckpointFile::Serialize(*parsed);
  auto again = OffsetCheckpointFile::Parse(text, path);
  Check(again.ok());
  Check(*again == *parsed);
  Check(OffsetCheckpointFile::Serialize(*again) == text);
  if (text == AsText(data, size)) {
    Scratch().Reset();
    std::string file = Scratch().Write("recovery-point-offset-checkpoint", AsBytes(text));
    auto checkpoint = OffsetCheckpointFile::Open(file, ScratchDir::fs());
    Check(checkpoint.ok());
    auto read = checkpoint->Read();
    Check(read.ok() && *read == *parsed);
  }
  return 0;
}
