// libFuzzer target: the input is the text of a `leader-epoch-checkpoint` file
// (spec §9.2: version 0, count, then "epoch startOffset" lines), parsed by
// LeaderEpochFileCache::Parse and, from a real file, by Open.
//
// Invariants checked (a violation aborts, i.e. is a finding):
//  * a failure is a Status whose message names the file;
//  * what parses re-serialises to text that parses to the same entries, and
//    that serialisation is a fixed point;
//  * Open on the same bytes agrees with Parse (both fail, or Open's cache
//    holds entries whose epochs and start offsets both strictly increase, as
//    Kafka's cache keeps them), and lookups on it stay inside the cache.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_support.h"
#include "log/leader_epoch_file_cache.h"

namespace daruma::fuzz {
namespace {

void CheckCache(const LeaderEpochFileCache& cache) {
  std::vector<EpochEntry> entries = cache.entries();
  for (size_t i = 1; i < entries.size(); ++i) {
    Check(entries[i - 1].first < entries[i].first);
    Check(entries[i - 1].second < entries[i].second);
  }
  Check(cache.LatestEpoch().has_value() == !entries.empty());
  for (const EpochEntry& e : entries) (void)cache.EndOffsetFor(e.first, INT64_MAX);
}

}  // namespace
}  // namespace daruma::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace daruma;
  using namespace daruma::fuzz;
  const std::string path = "fuzz/leader-epoch-checkpoint";
  auto parsed = LeaderEpochFileCache::Parse(AsText(data, size), path);
  if (!parsed.ok()) {
    Check(parsed.status().message().find(path) != std::string::npos);
  } else {
    std::string text = LeaderEpochFileCache::Serialize(*parsed);
    auto again = LeaderEpochFileCache::Parse(text, path);
    Check(again.ok());
    Check(*again == *parsed);
    Check(LeaderEpochFileCache::Serialize(*again) == text);
  }
  Scratch().Reset();
  std::string file = Scratch().Write("leader-epoch-checkpoint", ByteSpan(data, size));
  auto cache = LeaderEpochFileCache::Open(file, ScratchDir::fs());
  if (parsed.ok() && cache.ok()) CheckCache(*cache);
  if (!parsed.ok()) Check(!cache.ok() || size == 0);
  return 0;
}
