// libFuzzer target: the input is the image of an aborted-transaction index
// `00000000000000000100.txnindex` (spec §7.4: 34-byte entries, int16 version
// then four int64 fields, big-endian). It is read from a real file, searched
// and sanity-checked, then the entries are appended to a fresh index.
//
// Invariants checked (a violation aborts, i.e. is a finding):
//  * when AllAbortedTxns succeeds it returns floor(size / 34) entries whose
//    fields are the input bytes, and re-serialising them reproduces every
//    whole entry of the input except its version field (Kafka reads only the
//    first version byte; a failure means one was > 0);
//  * CollectAbortedTxns(from, to), for ranges around a sample of the entries
//    (the last one always), returns exactly the entries with
//    lastOffset >= from and firstOffset < to, in file order, whenever it
//    does not stop early (is_complete), and a prefix of them when it does.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/bytes.h"
#include "fuzz_support.h"
#include "log/transaction_index.h"

namespace daruma::fuzz {
namespace {

constexpr int64_t kBase = 100;
constexpr size_t kMaxInput = 64 * AbortedTxn::kSize * 16;
constexpr size_t kSearched = 16;

void CheckFields(const std::vector<AbortedTxn>& txns, ByteSpan input) {
  Check(txns.size() == input.size() / AbortedTxn::kSize);
  for (size_t i = 0; i < txns.size(); ++i) {
    const uint8_t* p = input.data() + i * AbortedTxn::kSize;
    Check(int8_t(p[0]) <= 0);
    Check(txns[i].producer_id == int64_t(LoadBe64(p + 2)));
    Check(txns[i].first_offset == int64_t(LoadBe64(p + 10)));
    Check(txns[i].last_offset == int64_t(LoadBe64(p + 18)));
    Check(txns[i].last_stable_offset == int64_t(LoadBe64(p + 26)));
  }
}

void CheckReserialised(const std::vector<AbortedTxn>& txns, ByteSpan input) {
  std::string path = Scratch().path() + "/00000000000000000200.txnindex";
  {
    TransactionIndex out(path, 200, ScratchDir::fs());
    // Append enforces increasing lastOffset; keep the prefix it accepts.
    for (const AbortedTxn& txn : txns) {
      if (!out.Append(txn).ok()) break;
    }
    Check(out.Close().ok());
  }
  if (txns.empty()) return;
  auto file = ScratchDir::fs()->Open(path, OpenMode::kRead);
  if (!file.ok()) return;  // Append refused the first entry: no file
  Bytes back(txns.size() * AbortedTxn::kSize);
  auto n = (*file)->ReadAt(0, back);
  Check(n.ok());
  for (size_t i = 0; i + AbortedTxn::kSize <= *n; i += AbortedTxn::kSize) {
    Check(back[i] == 0 && back[i + 1] == 0);
    Check(std::equal(back.begin() + i + 2, back.begin() + i + AbortedTxn::kSize,
                     input.begin() + i + 2));
  }
}

void CheckSearch(const TransactionIndex& index, const std::vector<AbortedTxn>& txns, int64_t from,
                 int64_t to) {
  auto found = index.CollectAbortedTxns(from, to);
  Check(found.ok());
  std::vector<AbortedTxn> expected;
  for (const AbortedTxn& t : txns) {
    if (t.last_offset >= from && t.first_offset < to) expected.push_back(t);
  }
  if (found->is_complete) {
    Check(found->aborted.size() <= expected.size());
    Check(std::equal(found->aborted.begin(), found->aborted.end(), expected.begin()));
  } else {
    Check(found->aborted == expected);
  }
}

}  // namespace
}  // namespace daruma::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace daruma;
  using namespace daruma::fuzz;
  if (size > kMaxInput) return 0;
  ByteSpan input(data, size);
  Scratch().Reset();
  std::string path = Scratch().Write("00000000000000000100.txnindex", input);
  TransactionIndex index(path, kBase, ScratchDir::fs(), false);
  auto txns = index.AllAbortedTxns();
  Status sane = index.SanityCheck();
  if (!txns.ok()) {
    Check(!sane.ok());
    return 0;
  }
  CheckFields(*txns, input);
  // Ranges around at most kSearched entries spread over the file: a search per
  // entry made the target quadratic (every search reads the whole file).
  const size_t step = std::max<size_t>(1, txns->size() / kSearched);
  for (size_t i = 0; i < txns->size(); i += step) {
    const AbortedTxn& t = (*txns)[i];
    CheckSearch(index, *txns, t.first_offset, t.last_offset);
    CheckSearch(index, *txns, t.last_offset, INT64_MAX);
  }
  if (!txns->empty()) {
    CheckSearch(index, *txns, txns->back().first_offset, txns->back().last_offset);
  }
  CheckSearch(index, *txns, INT64_MIN, INT64_MAX);
  CheckReserialised(*txns, input);
  return 0;
}
