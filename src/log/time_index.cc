#include "log/time_index.h"

#include <fmt/format.h>

#include <limits>

#include "common/bytes.h"
#include "log/relative_offset.h"

namespace daruma {

Result<std::unique_ptr<TimeIndex>> TimeIndex::Open(const std::string& path, int64_t base_offset,
                                                   int32_t max_index_size, FileSystem* fs,
                                                   bool writable, bool defer_new_file) {
  IndexFile::Options options{base_offset, max_index_size, writable, defer_new_file};
  DARUMA_ASSIGN_OR_RETURN(auto file, IndexFile::Open(fs, path, kEntrySize, options));
  return std::unique_ptr<TimeIndex>(new TimeIndex(std::move(file)));
}

TimestampOffset TimeIndex::Entry(size_t slot) const {
  const uint8_t* p = file_->EntryBytes(slot);
  return {int64_t(LoadBe64(p)), base_offset() + int32_t(LoadBe32(p + 8))};
}

TimestampOffset TimeIndex::LastEntry() const {
  return entries() == 0 ? TimestampOffset{-1, base_offset()} : Entry(entries() - 1);
}

Status TimeIndex::MaybeAppend(int64_t timestamp, int64_t offset, bool skip_full_check) {
  if (!skip_full_check && IsFull()) {
    return Status::InvalidArgument("attempt to append to a full time index " + path() +
                                   " (size = " + std::to_string(entries()) + ")");
  }
  // The roll's entry (skip_full_check) takes the slot IsFull reserves; an
  // index sized below one entry (segment.index.bytes 4-11, which Kafka
  // accepts) has none, and there Kafka's append overflows its buffer on
  // every roll. The entry is dropped instead: a time index only shortcuts
  // a lookup, which then reads the segment.
  if (max_entries() == 0) return Status::Ok();
  const TimestampOffset last = LastEntry();
  if (entries() != 0 && offset < last.offset) {
    return Status::InvalidOffset("attempt to append an offset (" + std::to_string(offset) +
                                 ") to slot " + std::to_string(entries()) +
                                 " no larger than the last offset appended (" +
                                 std::to_string(last.offset) + ") to " + path());
  }
  if (entries() != 0 && timestamp < last.timestamp) {
    return Status::InvalidArgument("attempt to append a timestamp (" + std::to_string(timestamp) +
                                   ") to slot " + std::to_string(entries()) +
                                   " no larger than the last timestamp appended (" +
                                   std::to_string(last.timestamp) + ") to " + path());
  }
  if (timestamp <= last.timestamp) return Status::Ok();
  if (!FitsRelativeOffset(base_offset(), offset)) {
    return Status::OffsetOverflow("offset " + std::to_string(offset) +
                                  " cannot be stored relative to base offset " +
                                  std::to_string(base_offset()) + " in " + path());
  }
  uint8_t entry[kEntrySize];
  StoreBe64(entry, uint64_t(timestamp));
  StoreBe32(entry + 8, uint32_t(offset - base_offset()));
  return file_->AppendEntry(entry);
}

TimestampOffset TimeIndex::Lookup(int64_t target_timestamp) const {
  const int64_t slot = file_->LargestLowerBoundSlot(
      target_timestamp, [this](size_t i) { return int64_t(LoadBe64(file_->EntryBytes(i))); });
  if (slot < 0) return {-1, base_offset()};
  return Entry(size_t(slot));
}

void TimeIndex::TruncateTo(int64_t offset) {
  auto offset_at = [this](size_t i) { return Entry(i).offset; };
  const int64_t slot = file_->LargestLowerBoundSlot(offset, offset_at);
  size_t keep = 0;
  if (slot >= 0) keep = offset_at(size_t(slot)) == offset ? size_t(slot) : size_t(slot) + 1;
  file_->TruncateToEntries(keep);
}

Status TimeIndex::SanityCheck() const {
  const TimestampOffset last = LastEntry();
  if (entries() != 0 && last.timestamp < Entry(0).timestamp) {
    return Status::Corruption(
        "corrupt time index found, time index file (" + path() +
        ") has non-zero size but the last timestamp is " + std::to_string(last.timestamp) +
        " which is less than the first timestamp " + std::to_string(Entry(0).timestamp));
  }
  if (entries() != 0 && last.offset < base_offset()) {
    return Status::Corruption("corrupt time index found, time index file (" + path() +
                              ") has non-zero size but the last offset is " +
                              std::to_string(last.offset) + " which is less than the base offset " +
                              std::to_string(base_offset()));
  }
  if (length() % kEntrySize != 0) {
    return Status::Corruption("time index file " + path() + " is corrupt, found " +
                              std::to_string(length()) + " bytes, which is not a multiple of " +
                              std::to_string(kEntrySize));
  }
  return Status::Ok();
}

Status TimeIndex::CheckEntries() const {
  TimestampOffset previous{std::numeric_limits<int64_t>::min(), base_offset()};
  for (size_t slot = 0; slot < entries(); ++slot) {
    const TimestampOffset e = Entry(slot);
    if (e.offset < previous.offset || e.timestamp < previous.timestamp) {
      return Status::Corruption(
          fmt::format("time index file {} slot {}: entry (timestamp {}, offset {}) goes back from "
                      "(timestamp {}, offset {})",
                      path(), slot, e.timestamp, e.offset, previous.timestamp, previous.offset));
    }
    previous = e;
  }
  return Status::Ok();
}

}  // namespace daruma
