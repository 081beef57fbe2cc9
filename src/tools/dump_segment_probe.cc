#include "tools/dump_segment_probe.h"

#include <algorithm>

#include "record/file_batch_reader.h"
#include "record/legacy_message.h"

namespace daruma::tools {
namespace {

// Kafka iterates the batch's records and takes max(record.timestamp).
int64_t MaxRecordTimestamp(const LogEntry& e) {
  int64_t max = -1;
  if (e.is_v2()) {
    auto records = e.batch().DecodeRecords(kToolMaxDecompressedBytes);
    if (!records.ok()) return -1;
    for (const Record& r : *records) max = std::max(max, r.timestamp);
    return max;
  }
  auto view = LegacyMessageView::Parse(e.bytes);
  if (!view.ok()) return -1;
  auto records = view->DecodeDeep();
  if (!records.ok()) return -1;
  for (const LegacyDeepRecord& d : *records) max = std::max(max, d.record.timestamp);
  return max;
}

Status ReaderStatus(const FileBatchReader& reader) {
  if (reader.stop_reason() == StopReason::kIoError) return reader.io_status();
  return Status::Ok();
}

}  // namespace

Result<std::optional<int64_t>> FirstBatchLastOffsetAt(const File& log, uint64_t position,
                                                      int64_t window) {
  DARUMA_ASSIGN_OR_RETURN(uint64_t size, log.Size());
  FileBatchReaderOptions ro;
  ro.start_position = std::min(position, size);
  ro.end_position = std::min<uint64_t>(size, position + uint64_t(std::max<int64_t>(window, 0)));
  FileBatchReader reader(&log, ro);
  auto entry = reader.Next();
  DARUMA_RETURN_IF_ERROR(ReaderStatus(reader));
  if (!entry || !entry->has_batch_header()) return std::optional<int64_t>();
  return std::optional<int64_t>(entry->last_offset());
}

Result<std::optional<ShallowBatchMatch>> FindBatchFrom(const File& log, uint64_t position,
                                                       int64_t target) {
  DARUMA_ASSIGN_OR_RETURN(uint64_t size, log.Size());
  FileBatchReaderOptions ro;
  ro.start_position = std::min(position, size);
  FileBatchReader reader(&log, ro);
  while (auto entry = reader.Next()) {
    if (!entry->has_batch_header()) break;
    if (entry->last_offset() >= target) {
      return std::optional<ShallowBatchMatch>(
          ShallowBatchMatch{entry->is_v2() ? entry->batch().base_offset() : entry->last_offset(),
                            entry->last_offset(), MaxRecordTimestamp(*entry)});
    }
  }
  DARUMA_RETURN_IF_ERROR(ReaderStatus(reader));
  return std::optional<ShallowBatchMatch>();
}

}  // namespace daruma::tools
