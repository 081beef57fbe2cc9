// libFuzzer target: the input is the image of a producer-state snapshot
// `<offset>.snapshot` (spec §8: version, CRC32C, then fixed-size producer
// entries), decoded by DecodeProducerSnapshot.
//
// Invariants checked (a violation aborts, i.e. is a finding):
//  * a failure is a Status whose message names the file;
//  * the format is canonical: whatever decodes re-encodes to the input byte
//    for byte (except for trailing bytes under a matching CRC, which Kafka
//    ignores too), and the re-encoding decodes to the same entries;
//  * ReadProducerSnapshot on a real file with the input agrees with the decoder.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "common/bytes.h"
#include "fuzz_support.h"
#include "log/producer_snapshot_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace daruma;
  using namespace daruma::fuzz;
  const std::string path = "fuzz/00000000000000000100.snapshot";
  ByteSpan input(data, size);
  auto decoded = DecodeProducerSnapshot(input, path);
  Scratch().Reset();
  std::string file = Scratch().Write("00000000000000000100.snapshot", input);
  auto read = ReadProducerSnapshot(ScratchDir::fs(), file);
  Check(read.ok() == decoded.ok());
  if (!decoded.ok()) {
    Check(decoded.status().message().find(path) != std::string::npos);
    return 0;
  }
  Check(*read == *decoded);
  // Bytes after the declared entries are ignored when the CRC, which covers
  // them, matches (as Kafka's schema read ignores them); only the CRC field
  // can then differ from the re-encoding. Without such bytes: canonical.
  constexpr size_t kCrcBegin = 2, kCrcEnd = 6;
  Bytes encoded = EncodeProducerSnapshot(*decoded);
  Check(encoded.size() <= size);
  if (encoded.size() == size) {
    Check(std::equal(encoded.begin(), encoded.end(), input.begin()));
  } else {
    Check(std::equal(encoded.begin(), encoded.begin() + kCrcBegin, input.begin()));
    Check(std::equal(encoded.begin() + kCrcEnd, encoded.end(), input.begin() + kCrcEnd));
  }
  auto again = DecodeProducerSnapshot(encoded, path);
  Check(again.ok() && *again == *decoded);
  return 0;
}
