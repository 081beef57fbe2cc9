#include "log/offset_index.h"

#include <fmt/format.h>

#include <limits>

#include "common/bytes.h"
#include "log/relative_offset.h"

namespace daruma {

Result<std::unique_ptr<OffsetIndex>> OffsetIndex::Open(const std::string& path, int64_t base_offset,
                                                       int32_t max_index_size, FileSystem* fs,
                                                       bool writable, bool defer_new_file) {
  IndexFile::Options options{base_offset, max_index_size, writable, defer_new_file};
  DARUMA_ASSIGN_OR_RETURN(auto file, IndexFile::Open(fs, path, kEntrySize, options));
  return std::unique_ptr<OffsetIndex>(new OffsetIndex(std::move(file)));
}

int64_t OffsetIndex::OffsetAt(size_t slot) const {
  return base_offset() + int32_t(LoadBe32(file_->EntryBytes(slot)));
}

OffsetPosition OffsetIndex::Entry(size_t slot) const {
  const uint8_t* p = file_->EntryBytes(slot);
  return {base_offset() + int32_t(LoadBe32(p)), int32_t(LoadBe32(p + 4))};
}

int64_t OffsetIndex::LastOffset() const {
  return entries() == 0 ? base_offset() : OffsetAt(entries() - 1);
}

OffsetPosition OffsetIndex::LastEntry() const {
  return entries() == 0 ? OffsetPosition{base_offset(), 0} : Entry(entries() - 1);
}

Status OffsetIndex::Append(int64_t offset, int32_t position) {
  if (IsFull()) {
    return Status::InvalidArgument("attempt to append to a full index " + path() +
                                   " (size = " + std::to_string(entries()) + ")");
  }
  if (entries() != 0 && offset <= LastOffset()) {
    return Status::InvalidOffset("attempt to append an offset (" + std::to_string(offset) +
                                 ") to position " + std::to_string(entries()) +
                                 " no larger than the last offset appended (" +
                                 std::to_string(LastOffset()) + ") to " + path());
  }
  if (!FitsRelativeOffset(base_offset(), offset)) {
    return Status::OffsetOverflow("offset " + std::to_string(offset) +
                                  " cannot be stored relative to base offset " +
                                  std::to_string(base_offset()) + " in " + path());
  }
  uint8_t entry[kEntrySize];
  StoreBe32(entry, uint32_t(offset - base_offset()));
  StoreBe32(entry + 4, uint32_t(position));
  return file_->AppendEntry(entry);
}

OffsetPosition OffsetIndex::Lookup(int64_t target_offset) const {
  const int64_t slot =
      file_->LargestLowerBoundSlot(target_offset, [this](size_t i) { return OffsetAt(i); });
  if (slot < 0) return {base_offset(), 0};
  return Entry(size_t(slot));
}

void OffsetIndex::TruncateTo(int64_t offset) {
  const int64_t slot =
      file_->LargestLowerBoundSlot(offset, [this](size_t i) { return OffsetAt(i); });
  size_t keep = 0;
  if (slot >= 0) keep = OffsetAt(size_t(slot)) == offset ? size_t(slot) : size_t(slot) + 1;
  file_->TruncateToEntries(keep);
}

Status OffsetIndex::SanityCheck() const {
  if (entries() != 0 && LastOffset() < base_offset()) {
    return Status::Corruption(
        "corrupt index found, index file (" + path() +
        ") has non-zero size but the last offset is " + std::to_string(LastOffset()) +
        " which is less than the base offset " + std::to_string(base_offset()));
  }
  if (length() % kEntrySize != 0) {
    return Status::Corruption("index file " + path() + " is corrupt, found " +
                              std::to_string(length()) + " bytes, which is not a multiple of " +
                              std::to_string(kEntrySize));
  }
  return Status::Ok();
}

Status OffsetIndex::CheckEntries(int64_t log_size) const {
  OffsetPosition previous{base_offset() - 1, -1};
  for (size_t slot = 0; slot < entries(); ++slot) {
    const OffsetPosition e = Entry(slot);
    if (e.offset <= previous.offset || e.position <= previous.position || e.position < 0 ||
        e.position >= log_size) {
      return Status::Corruption(fmt::format(
          "index file {} slot {}: entry (offset {}, position {}) must follow (offset {}, "
          "position {}) with both larger and point inside the {}-byte log",
          path(), slot, e.offset, e.position, previous.offset, previous.position, log_size));
    }
    previous = e;
  }
  return Status::Ok();
}

}  // namespace daruma
