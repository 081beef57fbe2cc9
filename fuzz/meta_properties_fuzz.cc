// libFuzzer target: the input is the text of a `meta.properties` file (spec
// §9.5: Java properties, version 0 with broker.id or version 1 with node.id,
// cluster.id and optional directory.id), parsed by MetaProperties::Parse
// over ParseJavaProperties.
//
// Invariants checked (a violation aborts, i.e. is a finding):
//  * a failure is a Status whose message names the file;
//  * what parses re-serialises to text that parses to an equal MetaProperties,
//    and that serialisation is a fixed point;
//  * reading the input from a real file agrees with Parse.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "log/meta_properties.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace daruma;
  using namespace daruma::fuzz;
  const std::string path = "fuzz/meta.properties";
  const std::string date = "Mon Nov 30 12:00:00 UTC 2026";
  auto parsed = MetaProperties::Parse(AsText(data, size), path);
  Scratch().Reset();
  std::string file = Scratch().Write("meta.properties", ByteSpan(data, size));
  auto read = MetaProperties::Read(file, ScratchDir::fs());
  Check(read.ok() == parsed.ok());
  if (!parsed.ok()) {
    Check(parsed.status().message().find(path) != std::string::npos);
    return 0;
  }
  Check(*read == *parsed);
  std::string text = parsed->Serialize(date);
  auto again = MetaProperties::Parse(text, path);
  Check(again.ok());
  Check(*again == *parsed);
  Check(again->Serialize(date) == text);
  return 0;
}
