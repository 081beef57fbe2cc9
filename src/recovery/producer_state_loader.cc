#include "recovery/producer_state_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <vector>

#include "record/file_batch_reader.h"

namespace daruma {

namespace {

// Applies every batch with a producer id in [start_position, max_position) of
// `segment`; transactions completed on the way are marked complete at the
// end, as Kafka's loadProducersFromRecords does.
Status LoadProducersFromRange(ProducerStateManager* psm, LogSegment* segment,
                              int64_t start_position, int64_t max_position,
                              int64_t* scanned_bytes) {
  FileBatchReaderOptions options;
  options.start_position = uint64_t(start_position);
  options.end_position = uint64_t(max_position);
  FileBatchReader reader(segment->log_file(), options);
  std::vector<CompletedTxn> completed;
  while (auto entry = reader.Next()) {
    if (!entry->is_v2()) continue;  // legacy entries carry no producer state
    if (!entry->has_batch_header()) {
      return Status::Corruption(fmt::format("{}: batch at position {} is only {} bytes, below {}",
                                            segment->log_path(), entry->position, entry->size(),
                                            kRecordBatchOverhead));
    }
    RecordBatchView batch = entry->batch();
    if (!batch.has_producer_id()) continue;
    DARUMA_ASSIGN_OR_RETURN(std::optional<CompletedTxn> done, psm->ApplyBatch(batch));
    if (done) completed.push_back(*done);
  }
  DARUMA_RETURN_IF_ERROR(reader.ScanStatus());
  if (scanned_bytes != nullptr) *scanned_bytes += int64_t(reader.position()) - start_position;
  for (const CompletedTxn& txn : completed) DARUMA_RETURN_IF_ERROR(psm->CompleteTxn(txn));
  return Status::Ok();
}

// Kafka's LogSegment.translateOffset(offset).position, or nullopt.
Result<std::optional<int32_t>> PositionOf(LogSegment* segment, int64_t offset) {
  DARUMA_ASSIGN_OR_RETURN(OffsetIndex * index, segment->offset_index());
  DARUMA_ASSIGN_OR_RETURN(auto found,
                          segment->TranslateOffset(offset, index->Lookup(offset).position));
  if (!found) return std::optional<int32_t>();
  return std::optional<int32_t>(found->position);
}

Status ScanSegments(ProducerStateManager* psm, const SegmentMap& segments,
                    const ProducerStateRebuild& params, const std::set<int64_t>& to_snapshot,
                    int64_t* scanned_bytes) {
  const int64_t from = psm->MapEndOffset();
  const int64_t last_offset = params.last_offset;
  // Kafka's segments.values(from, to): from the segment containing `from`.
  auto it = segments.upper_bound(from);
  if (it != segments.begin()) --it;
  auto floor_of_last = segments.upper_bound(last_offset);
  const LogSegment* segment_of_last =
      floor_of_last == segments.begin() ? nullptr : std::prev(floor_of_last)->second.get();
  for (; it != segments.end() && it->first < last_offset; ++it) {
    LogSegment* segment = it->second.get();
    const int64_t start =
        std::max({segment->base_offset(), psm->MapEndOffset(), params.log_start_offset});
    psm->UpdateMapEndOffset(start);
    if (to_snapshot.count(segment->base_offset())) {
      DARUMA_RETURN_IF_ERROR(psm->TakeSnapshot().status());
    }
    int64_t max_position = segment->size();
    if (segment == segment_of_last) {
      DARUMA_ASSIGN_OR_RETURN(auto position, PositionOf(segment, last_offset));
      if (position) max_position = *position;
    }
    DARUMA_ASSIGN_OR_RETURN(auto start_position, PositionOf(segment, start));
    if (!start_position || *start_position >= max_position) continue;
    DARUMA_RETURN_IF_ERROR(
        LoadProducersFromRange(psm, segment, *start_position, max_position, scanned_bytes));
  }
  return Status::Ok();
}

}  // namespace

Status RebuildProducerState(ProducerStateManager* psm, const SegmentMap& segments,
                            const ProducerStateRebuild& params, int64_t* scanned_bytes) {
  std::set<int64_t> to_snapshot = {params.last_offset};
  if (!segments.empty()) {
    auto last = std::prev(segments.end());
    to_snapshot.insert(last->first);
    if (last != segments.begin()) to_snapshot.insert(std::prev(last)->first);
  }

  if (!psm->LatestSnapshotOffset() && params.reload_from_clean_shutdown) {
    // Upgrade shortcut: empty snapshots, no scan (ascending, as Kafka's Seq).
    for (int64_t offset : to_snapshot) {
      psm->UpdateMapEndOffset(offset);
      DARUMA_RETURN_IF_ERROR(psm->TakeSnapshot().status());
    }
    return Status::Ok();
  }

  const bool empty_before_truncation = psm->IsEmpty() && psm->MapEndOffset() >= params.last_offset;
  DARUMA_RETURN_IF_ERROR(
      psm->TruncateAndReload(params.log_start_offset, params.last_offset, params.now_ms));
  if (params.last_offset > psm->MapEndOffset() && !empty_before_truncation) {
    DARUMA_RETURN_IF_ERROR(ScanSegments(psm, segments, params, to_snapshot, scanned_bytes));
  }
  psm->UpdateMapEndOffset(params.last_offset);
  return psm->TakeSnapshot().status();
}

}  // namespace daruma
