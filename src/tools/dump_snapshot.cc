#include "tools/dump_snapshot.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include "log/producer_snapshot_file.h"

namespace daruma::tools {
namespace {

void PrintJson(const std::string& path, const ProducerSnapshotEntry& e, DumpContext& ctx) {
  nlohmann::ordered_json j = {
      {"type", "producerSnapshotEntry"},
      {"file", path},
      {"producerId", e.producer_id},
      {"producerEpoch", e.epoch},
      {"coordinatorEpoch", e.coordinator_epoch},
      {"currentTxnFirstOffset", e.current_txn_first_offset >= 0
                                    ? nlohmann::ordered_json(e.current_txn_first_offset)
                                    : nlohmann::ordered_json()},
      {"lastTimestamp", e.timestamp}};
  if (e.last_offset >= 0) {
    j["firstSequence"] = DecrementSequence(e.last_sequence, e.offset_delta);
    j["lastSequence"] = e.last_sequence;
    j["lastOffset"] = e.last_offset;
    j["offsetDelta"] = e.offset_delta;
    j["timestamp"] = e.timestamp;
  }
  ctx.out << j.dump() << "\n";
}

void PrintText(const ProducerSnapshotEntry& e, DumpContext& ctx) {
  ctx.out << fmt::format(
      "producerId: {} producerEpoch: {} coordinatorEpoch: {} currentTxnFirstOffset: {} "
      "lastTimestamp: {} ",
      e.producer_id, e.epoch, e.coordinator_epoch,
      OptionalLongString(e.current_txn_first_offset >= 0, e.current_txn_first_offset), e.timestamp);
  if (e.last_offset >= 0) {
    ctx.out << fmt::format(
        "firstSequence: {} lastSequence: {} lastOffset: {} offsetDelta: {} timestamp: {}",
        DecrementSequence(e.last_sequence, e.offset_delta), e.last_sequence, e.last_offset,
        e.offset_delta, e.timestamp);
  }
  ctx.out << "\n";
}

}  // namespace

int DumpProducerSnapshotFile(const std::string& path, DumpContext& ctx) {
  auto entries = ReadProducerSnapshot(FileSystem::Default(), path);
  if (!entries.ok()) {
    ctx.err << entries.status().message() << "\n";
    return entries.status().code() == StatusCode::kIoError ? kDumpUsageOrIo : kDumpCorrupt;
  }
  for (const ProducerSnapshotEntry& e : *entries) {
    if (ctx.options.json) {
      PrintJson(path, e, ctx);
    } else {
      PrintText(e, ctx);
    }
  }
  return kDumpClean;
}

}  // namespace daruma::tools
