// libFuzzer target: the input is the image of an offset index
// `00000000000000000100.index` (spec §7.2: 8-byte entries, relative offset and
// position, big-endian). It is opened read-only from a real file, then
// SanityCheck, CheckEntries and lookups run on it; it is opened again writable
// (which resizes the file) and trimmed back.
//
// Invariants checked (a violation aborts, i.e. is a finding):
//  * entries() = floor(size / 8) and Entry(i) decodes the input bytes exactly;
//  * when CheckEntries passes, the input's offsets are strictly increasing and
//    Lookup(t) equals the entry with the largest offset <= t (or (base, 0)),
//    found by std::upper_bound over the offsets decoded from the input bytes,
//    for every entry's offset and its neighbours (a linear reference made the
//    target quadratic: two thirds of its time at 8,000 entries);
//  * a writable open followed by TrimToValidSize leaves the whole entries of
//    the input byte for byte.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "fuzz_support.h"
#include "log/offset_index.h"

namespace daruma::fuzz {
namespace {

constexpr int64_t kBase = 100;
constexpr int32_t kMaxIndexSize = 1 << 20;

// The input's entries, decoded independently of OffsetIndex.
std::vector<OffsetPosition> Decode(ByteSpan input) {
  std::vector<OffsetPosition> out(input.size() / OffsetIndex::kEntrySize);
  for (size_t i = 0; i < out.size(); ++i) {
    const uint8_t* p = input.data() + i * OffsetIndex::kEntrySize;
    out[i] = {kBase + int32_t(LoadBe32(p)), int32_t(LoadBe32(p + 4))};
  }
  return out;
}

// The entry with the largest offset <= target in sorted `entries`, else (base, 0).
OffsetPosition Reference(const std::vector<OffsetPosition>& entries, int64_t target) {
  auto after = std::upper_bound(entries.begin(), entries.end(), target,
                                [](int64_t t, const OffsetPosition& e) { return t < e.offset; });
  return after == entries.begin() ? OffsetPosition{kBase, 0} : *(after - 1);
}

void CheckDecoding(const OffsetIndex& index, const std::vector<OffsetPosition>& entries) {
  Check(index.entries() == entries.size());
  for (size_t i = 0; i < entries.size(); ++i) Check(index.Entry(i) == entries[i]);
}

void CheckLookups(const OffsetIndex& index, const std::vector<OffsetPosition>& entries,
                  int64_t log_size) {
  if (!index.CheckEntries(log_size).ok()) return;
  Check(std::adjacent_find(entries.begin(), entries.end(),
                           [](const OffsetPosition& a, const OffsetPosition& b) {
                             return a.offset >= b.offset;
                           }) == entries.end());
  // CheckEntries covers SanityCheck's conditions except the file length.
  Check(index.SanityCheck().ok() == (index.length() % OffsetIndex::kEntrySize == 0));
  for (const OffsetPosition& e : entries) {
    for (int64_t t : {e.offset - 1, e.offset, e.offset + 1}) {
      Check(index.Lookup(t) == Reference(entries, t));
    }
  }
  Check(index.Lookup(kBase - 1) == Reference(entries, kBase - 1));
  Check(index.Lookup(INT64_MAX) == Reference(entries, INT64_MAX));
}

void CheckWritableReopen(const std::string& path, ByteSpan input) {
  auto index = OffsetIndex::Open(path, kBase, kMaxIndexSize, ScratchDir::fs(), true);
  if (!index.ok()) return;
  Check((*index)->TrimToValidSize().ok());
  Check((*index)->Close().ok());
  auto size = ScratchDir::fs()->FileSize(path);
  Check(size.ok());
  size_t whole = input.size() / OffsetIndex::kEntrySize * OffsetIndex::kEntrySize;
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
  std::string path = Scratch().Write("00000000000000000100.index", input);
  {
    auto index = OffsetIndex::Open(path, kBase, kMaxIndexSize, ScratchDir::fs(), false);
    Check(index.ok());
    const std::vector<OffsetPosition> entries = Decode(input);
    CheckDecoding(**index, entries);
    (void)(*index)->SanityCheck();
    (void)(*index)->LastEntry();
    CheckLookups(**index, entries, int64_t(1) << 31);
    CheckLookups(**index, entries, int64_t(size) * 64);
  }
  CheckWritableReopen(path, input);
  return 0;
}
