// libFuzzer target: the input is the image of a `.log` file. It is iterated
// with FileBatchReader (through an in-memory File) and every entry is
// validated and decoded the way recovery and `daruma dump --deep-iteration`
// do, whatever its CRC says, with a small decompression bound.
//
// Each entry is copied into an allocation of exactly its size before it is
// inspected, so AddressSanitizer catches any read past the entry (inside the
// reader's block buffer such reads would go unnoticed).
//
// Invariants checked (a violation aborts, i.e. is a finding): entries lie
// inside the file and follow each other without gaps; iteration stops at or
// before the end; a clean end means every byte was consumed.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include "common/bytes.h"
#include "common/file_system.h"
#include "record/control_record.h"
#include "record/file_batch_reader.h"
#include "record/legacy_message.h"
#include "record/log_entry.h"
#include "record/record_batch.h"

namespace daruma {
namespace {

constexpr size_t kMaxDecompressed = 256 << 10;

// A read-only File over the fuzzer's bytes.
class MemoryFile final : public File {
 public:
  explicit MemoryFile(ByteSpan data) : data_(data) {}

  Result<size_t> ReadAt(uint64_t pos, std::span<uint8_t> out) const override {
    if (pos >= data_.size()) return size_t{0};
    size_t n = std::min(out.size(), size_t(data_.size() - pos));
    std::copy_n(data_.data() + pos, n, out.data());
    return n;
  }
  Status WriteAt(uint64_t, std::span<const uint8_t>) override { return ReadOnly(); }
  Status Sync() override { return ReadOnly(); }
  Status Truncate(uint64_t) override { return ReadOnly(); }
  Result<uint64_t> Size() const override { return uint64_t(data_.size()); }
  const std::string& path() const override { return path_; }

 private:
  Status ReadOnly() const { return Status::InvalidArgument("fuzz input is read-only"); }
  ByteSpan data_;
  std::string path_ = "fuzz-input.log";
};

void Check(bool condition) {
  if (!condition) std::abort();
}

void DecodeV2(ByteSpan bytes) {
  auto view = RecordBatchView::Parse(bytes);
  if (!view.ok()) return;
  (void)view->last_sequence();
  (void)view->delete_horizon_ms();
  auto records = view->DecodeRecords(kMaxDecompressed);
  if (!records.ok()) return;
  Check(records->size() == size_t(view->records_count()));
  if (!view->is_control()) return;
  for (const Record& r : *records) {
    if (!r.key) continue;
    auto type = ParseControlRecordKey(AsBytes(*r.key));
    if (type.ok() && r.value &&
        (*type == ControlRecordType::kCommit || *type == ControlRecordType::kAbort)) {
      (void)ParseEndTxnMarkerCoordinatorEpoch(AsBytes(*r.value));
    }
  }
}

void DecodeLegacy(ByteSpan bytes) {
  auto view = LegacyMessageView::Parse(bytes);
  if (!view.ok()) return;
  (void)view->timestamp();
  (void)view->key();
  (void)view->value();
  (void)view->DecodeDeep(kMaxDecompressed);
}

void InspectEntry(const LogEntry& original) {
  Bytes copy(original.bytes.begin(), original.bytes.end());
  LogEntry entry{original.position, ByteSpan(copy), original.magic};
  Status valid = entry.Validate();
  if (valid.ok()) {
    // Batch-level accessors are meaningful once the entry is valid.
    (void)entry.last_offset();
    (void)entry.max_timestamp();
    (void)entry.partition_leader_epoch();
  }
  if (entry.is_v2()) {
    DecodeV2(entry.bytes);
  } else {
    DecodeLegacy(entry.bytes);
  }
}

}  // namespace
}  // namespace daruma

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace daruma;
  MemoryFile file(ByteSpan(data, size));
  FileBatchReaderOptions options;
  options.block_size = 4096;  // small blocks exercise refills and oversized entries
  FileBatchReader reader(&file, options);
  uint64_t expected_position = 0;
  while (auto entry = reader.Next()) {
    Check(uint64_t(entry->position) == expected_position);
    Check(entry->size() >= size_t(kLogOverhead) + 14);
    Check(uint64_t(entry->position) + entry->size() <= size);
    expected_position += entry->size();
    InspectEntry(*entry);
  }
  Check(reader.position() == expected_position);
  Check(reader.position() <= size);
  if (reader.stop_reason() == StopReason::kEndOfFile) Check(reader.position() == size);
  Check(reader.stop_reason() != StopReason::kIoError);
  return 0;
}
