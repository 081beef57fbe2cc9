#include "tools/dump_checkpoint.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>

#include "log/leader_epoch_file_cache.h"
#include "log/offset_checkpoint_file.h"
#include "log/partition_metadata_file.h"

namespace daruma::tools {

MetadataFileKind MetadataFileKindOf(const std::string& file_name) {
  if (file_name == kLeaderEpochCheckpointFileName) return MetadataFileKind::kLeaderEpochCheckpoint;
  if (file_name == kPartitionMetadataFileName) return MetadataFileKind::kPartitionMetadata;
  if (file_name.ends_with("-offset-checkpoint")) return MetadataFileKind::kOffsetCheckpoint;
  return MetadataFileKind::kNone;
}

namespace {

using Json = nlohmann::ordered_json;

void Emit(DumpContext& ctx, const Json& json, const std::string& text) {
  if (ctx.options.json) {
    ctx.out << json.dump(-1, ' ', false, Json::error_handler_t::replace) << "\n";
  } else {
    ctx.out << text << "\n";
  }
}

Status DumpOffsets(const std::string& path, std::string_view content, DumpContext& ctx) {
  DARUMA_ASSIGN_OR_RETURN(OffsetMap offsets, OffsetCheckpointFile::Parse(content, path));
  for (const auto& [tp, offset] : offsets) {
    Emit(ctx,
         {{"type", "offsetCheckpointEntry"},
          {"file", path},
          {"topic", tp.topic},
          {"partition", tp.partition},
          {"offset", offset}},
         fmt::format("topic: {} partition: {} offset: {}", tp.topic, tp.partition, offset));
  }
  return Status::Ok();
}

Status DumpEpochs(const std::string& path, std::string_view content, DumpContext& ctx) {
  DARUMA_ASSIGN_OR_RETURN(auto entries, LeaderEpochFileCache::Parse(content, path));
  for (const auto& [epoch, start] : entries) {
    Emit(ctx,
         {{"type", "leaderEpochEntry"}, {"file", path}, {"epoch", epoch}, {"startOffset", start}},
         fmt::format("epoch: {} startOffset: {}", epoch, start));
  }
  return Status::Ok();
}

Status DumpPartitionMetadata(const std::string& path, std::string_view content, DumpContext& ctx) {
  DARUMA_ASSIGN_OR_RETURN(PartitionMetadata m, PartitionMetadataFile::Parse(content, path));
  const std::string id = m.topic_id.ToString();
  Emit(ctx,
       {{"type", "partitionMetadata"}, {"file", path}, {"version", m.version}, {"topicId", id}},
       fmt::format("version: {} topicId: {}", m.version, id));
  return Status::Ok();
}

}  // namespace

int DumpMetadataFile(const std::string& path, MetadataFileKind kind, DumpContext& ctx) {
  auto bytes = FileSystem::Default()->ReadFile(path);
  if (!bytes.ok()) {
    ctx.err << "daruma dump: " << bytes.status().ToString() << "\n";
    return kDumpUsageOrIo;
  }
  std::string_view content(reinterpret_cast<const char*>(bytes->data()), bytes->size());
  Status s;
  switch (kind) {
    case MetadataFileKind::kOffsetCheckpoint:
      s = DumpOffsets(path, content, ctx);
      break;
    case MetadataFileKind::kLeaderEpochCheckpoint:
      s = DumpEpochs(path, content, ctx);
      break;
    case MetadataFileKind::kPartitionMetadata:
      s = DumpPartitionMetadata(path, content, ctx);
      break;
    case MetadataFileKind::kNone:
      return kDumpUsageOrIo;
  }
  if (!s.ok()) {
    ctx.err << s.message() << "\n";
    return kDumpCorrupt;
  }
  return kDumpClean;
}

}  // namespace daruma::tools
