// libFuzzer target: the input is the text of a `partition.metadata` file
// (spec §9.4: "version: 0" and "topic_id: <base64 uuid>" lines).
//
// Invariants checked (a violation aborts, i.e. is a finding):
//  * a failure is a Status whose message names the file;
//  * what parses has a version >= 0, and Serialize of its topic id
//    parses back to the same id; that text is a fixed point;
//  * reading the input from a real file agrees with Parse.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "log/partition_metadata_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace daruma;
  using namespace daruma::fuzz;
  const std::string path = "fuzz/partition.metadata";
  auto parsed = PartitionMetadataFile::Parse(AsText(data, size), path);
  Scratch().Reset();
  std::string file = Scratch().Write("partition.metadata", ByteSpan(data, size));
  auto read = PartitionMetadataFile(file, ScratchDir::fs()).Read();
  Check(read.ok() == parsed.ok());
  if (!parsed.ok()) {
    Check(parsed.status().message().find(path) != std::string::npos);
    Check(read.status().message().find(file) != std::string::npos);
    return 0;
  }
  Check(read->topic_id == parsed->topic_id && read->version == parsed->version);
  Check(parsed->version >= 0);  // spec §9.4: any version >= 0 is read
  std::string text = PartitionMetadataFile::Serialize(parsed->topic_id);
  auto again = PartitionMetadataFile::Parse(text, path);
  Check(again.ok());
  Check(again->topic_id == parsed->topic_id);
  Check(PartitionMetadataFile::Serialize(again->topic_id) == text);
  return 0;
}
