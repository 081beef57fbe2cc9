#include "recovery/partition_dir_heal.h"

#include <array>
#include <limits>
#include <string>

#include "log/log_file_names.h"
#include "log/log_segment.h"
#include "log/offset_index.h"
#include "record/file_batch_reader.h"

namespace daruma {

bool IsStrayPartitionFileName(std::string_view name) {
  for (std::string_view tail : {kDeletedFileSuffix, kCleanedFileSuffix, kSwapFileSuffix}) {
    if (HasSuffix(name, tail)) {
      name.remove_suffix(tail.size());
      break;
    }
  }
  const std::array<std::string_view, 5> kafka_suffixes = {kLogFileSuffix, kIndexFileSuffix,
                                                          kTimeIndexFileSuffix, kTxnIndexFileSuffix,
                                                          kProducerSnapshotFileSuffix};
  for (std::string_view suffix : kafka_suffixes) {
    if (HasSuffix(name, suffix)) return !OffsetFromFileName(name).ok();
  }
  return false;
}

Status RebuildLeaderEpochs(const SegmentMap& segments, std::optional<int64_t> below_base,
                           LeaderEpochFileCache* cache, int64_t* scanned) {
  std::optional<int32_t> latest = cache->LatestEpoch();
  for (const auto& [base, segment] : segments) {
    if (below_base && base >= *below_base) break;
    FileBatchReader reader(segment->log_file());
    while (std::optional<LogEntry> entry = reader.Next()) {
      if (!entry->is_v2() || !entry->has_batch_header()) continue;
      const int32_t epoch = entry->partition_leader_epoch();
      if (epoch < 0 || (latest && epoch <= *latest)) continue;
      DARUMA_RETURN_IF_ERROR(cache->Assign(epoch, entry->batch().base_offset()));
      latest = epoch;
    }
    *scanned += int64_t(reader.position());
    if (reader.stop_reason() == StopReason::kIoError) return reader.io_status();
  }
  return Status::Ok();
}

Result<std::optional<int64_t>> ReadNextOffsetOfWholeTail(LogSegment* segment, ReportedDamage* why) {
  DARUMA_ASSIGN_OR_RETURN(OffsetIndex * index, segment->offset_index());
  FileBatchReaderOptions options;
  options.start_position = uint64_t(index->Lookup(index->LastOffset()).position);
  options.end_position = uint64_t(segment->size());
  options.file_size = uint64_t(segment->size());  // at least: the segment's bytes
  FileBatchReader reader(segment->log_file(), options);
  int64_t next = segment->base_offset();
  bool first_entry = true;
  while (std::optional<LogEntry> entry = reader.Next()) {
    if (!entry->has_batch_header()) {
      *why = {DamageKind::kBadSize, segment->log_path() + ": entry at position " +
                                        std::to_string(entry->position) +
                                        " is too short for a batch header"};
      return std::optional<int64_t>();
    }
    // Offsets strictly increase; a baseOffset (outside the CRC) that goes
    // back makes the log end offset wrong.
    const int64_t base = entry->is_v2() ? entry->batch().base_offset() : entry->last_offset();
    if (!first_entry && base < next) {
      *why = {DamageKind::kNonMonotonicOffset,
              segment->log_path() + ": batch at position " + std::to_string(entry->position) +
                  " has baseOffset " + std::to_string(base) +
                  ", below the end of the batch before it (" + std::to_string(next) + ")"};
      return std::optional<int64_t>();
    }
    if (entry->last_offset() < base ||
        entry->last_offset() == std::numeric_limits<int64_t>::max()) {
      *why = {DamageKind::kOffsetOverflow,
              segment->log_path() + ": batch at position " + std::to_string(entry->position) +
                  " ends at offset " + std::to_string(entry->last_offset()) +
                  ": no next offset below 2^63"};
      return std::optional<int64_t>();
    }
    first_entry = false;
    next = entry->last_offset() + 1;
  }
  switch (reader.stop_reason()) {
    case StopReason::kEndOfFile:
      return std::optional<int64_t>(next);
    case StopReason::kIoError:
      return reader.io_status();
    default:
      *why = {reader.damage().value_or(DamageKind::kTornTail), reader.stop_message()};
      return std::optional<int64_t>();
  }
}

}  // namespace daruma
