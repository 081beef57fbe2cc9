// libFuzzer target: the input is the image of an offset index
// `00000000000000000100.index` (spec §7.2: 8-byte entries, relative offset and
// position, big-endian). It is opened read-only from a real file, then
// SanityCheck, CheckEntries and lookups run on it; it is opened again writable
// (which resizes the file) and trimmed back.
//
// Invariants checked (a violation aborts, i.e. is a finding):
//  * entries() = floor(size / 8) and Entry(i) decodes the input bytes exactly;
//  * when CheckEntries passes, Lookup(t) equals a linear search for the entry
//    with the largest offset <= t (or (base, 0)), for every entry's offset and
//    its neighbours;
//  * a writable open followed by TrimToValidSize leaves the whole entries of
//    the input byte for byte.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "common/bytes.h"
#include "fuzz_support.h"
#include "log/offset_index.h"

namespace daruma::fuzz {
namespace {

constexpr int64_t kBase = 100;
constexpr int32_t kMaxIndexSize = 1 << 20;

OffsetPosition Linear(const OffsetIndex& index, int64_t target) {
  OffsetPosition best{kBase, 0};
  for (size_t i = 0; i < index.entries(); ++i) {
    OffsetPosition e = index.Entry(i);
    if (e.offset <= target) best = e;
  }
  return best;
}

void CheckDecoding(const OffsetIndex& index, ByteSpan input) {
  Check(index.entries() == input.size() / OffsetIndex::kEntrySize);
  for (size_t i = 0; i < index.entries(); ++i) {
    const uint8_t* p = input.data() + i * OffsetIndex::kEntrySize;
    OffsetPosition e = index.Entry(i);
    Check(e.offset == kBase + int32_t(LoadBe32(p)));
    Check(e.position == int32_t(LoadBe32(p + 4)));
  }
}

void CheckLookups(const OffsetIndex& index, int64_t log_size) {
  if (!index.CheckEntries(log_size).ok()) return;
  // CheckEntries covers SanityCheck's conditions except the file length.
  Check(index.SanityCheck().ok() == (index.length() % OffsetIndex::kEntrySize == 0));
  for (size_t i = 0; i < index.entries(); ++i) {
    int64_t offset = index.Entry(i).offset;
    for (int64_t t : {offset - 1, offset, offset + 1}) Check(index.Lookup(t) == Linear(index, t));
  }
  Check(index.Lookup(kBase - 1) == Linear(index, kBase - 1));
  Check(index.Lookup(INT64_MAX) == Linear(index, INT64_MAX));
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
    CheckDecoding(**index, input);
    (void)(*index)->SanityCheck();
    (void)(*index)->LastEntry();
    CheckLookups(**index, int64_t(1) << 31);
    CheckLookups(**index, int64_t(size) * 64);
  }
  CheckWritableReopen(path, input);
  return 0;
}
