// libFuzzer target: the input is the image of a time index
// `00000000000000000100.timeindex` (spec §7.3: 12-byte entries, int64
// timestamp and int32 relative offset, big-endian). It is opened read-only
// from a real file, then SanityCheck, CheckEntries and lookups run on it; it is
// opened again writable (which resizes the file) and trimmed back.
//
// Invariants checked (a violation aborts, i.e. is a finding):
//  * entries() = floor(size / 12) and Entry(i) decodes the input bytes exactly;
//  * when CheckEntries passes, the input's timestamps do not decrease and
//    Lookup(t) has the timestamp of the last entry with timestamp <= t (-1 when
//    none), found by std::upper_bound over the timestamps decoded from the
//    input bytes, for every entry's timestamp and its neighbours (a linear
//    reference made the target quadratic);
//  * a writable open followed by TrimToValidSize leaves the whole entries of
//    the input byte for byte.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "fuzz_support.h"
#include "log/time_index.h"

namespace daruma::fuzz {
namespace {

constexpr int64_t kBase = 100;
constexpr size_t kEntrySize = 12;
constexpr int32_t kMaxIndexSize = 1 << 20;

// The input's entries, decoded independently of TimeIndex.
std::vector<TimestampOffset> Decode(ByteSpan input) {
  std::vector<TimestampOffset> out(input.size() / kEntrySize);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint8_t* p = input.data() + i * kEntrySize;
    out[i] = {int64_t(LoadBe64(p)), kBase + int32_t(LoadBe32(p + 8))};
  }
  return out;
}

// With non-decreasing timestamps, Kafka's binary search lands on the last slot
// whose timestamp is <= target; -1 when there is none.
int64_t ReferenceTimestamp(const std::vector<int64_t>& timestamps, int64_t target) {
  auto after = std::upper_bound(timestamps.begin(), timestamps.end(), target);
  return after == timestamps.begin() ? -1 : *(after - 1);
}

void CheckDecoding(const TimeIndex& index, const std::vector<TimestampOffset>& entries) {
  Check(index.entries() == entries.size());
  for (size_t i = 0; i < entries.size(); ++i) Check(index.Entry(i) == entries[i]);
}

void CheckLookups(const TimeIndex& index, const std::vector<TimestampOffset>& entries) {
  if (!index.CheckEntries().ok()) return;
  std::vector<int64_t> timestamps(entries.size());
  for (size_t i = 0; i < entries.size(); ++i) timestamps[i] = entries[i].timestamp;
  Check(std::is_sorted(timestamps.begin(), timestamps.end()));
  // CheckEntries covers SanityCheck's conditions except the file length.
  Check(index.SanityCheck().ok() == (index.length() % kEntrySize == 0));
  for (int64_t ts : timestamps) {
    for (int64_t t : {ts, ts + (ts < INT64_MAX), ts - (ts > INT64_MIN)}) {
      Check(index.Lookup(t).timestamp == ReferenceTimestamp(timestamps, t));
    }
  }
}

void CheckWritableReopen(const std::string& path, ByteSpan input) {
  auto index = TimeIndex::Open(path, kBase, kMaxIndexSize, ScratchDir::fs(), true);
  if (!index.ok()) return;
  Check((*index)->TrimToValidSize().ok());
  Check((*index)->Close().ok());
  auto size = ScratchDir::fs()->FileSize(path);
  Check(size.ok());
  size_t whole = input.size() / kEntrySize * kEntrySize;
  Check(*size == whole);
  auto file = ScratchDir::fs()->Open(path, OpenMode::kRead);
  Check(file.ok());
  Bytes back(whole);
  auto n = (*file)->ReadAt(0, back);
  Check(n.ok() && *n == whole);
  Check(std::equal(back.begin(), back.end(), input.begin()));
}

}  // namespace
}  // namespace daruma::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace daruma;
  using namespace daruma::fuzz;
  if (size > kMaxIndexSize) return 0;
  ByteSpan input(data, size);
  Scratch().Reset();
  std::string path = Scratch().Write("00000000000000000100.timeindex", input);
  {
    auto index = TimeIndex::Open(path, kBase, kMaxIndexSize, ScratchDir::fs(), false);
    Check(index.ok());
    const std::vector<TimestampOffset> entries = Decode(input);
    CheckDecoding(**index, entries);
    (void)(*index)->SanityCheck();
    (void)(*index)->LastEntry();
    CheckLookups(**index, entries);
  }
  CheckWritableReopen(path, input);
  return 0;
}
