#include "log/offset_checkpoint_file.h"

#include "common/bytes.h"
#include "log/checkpoint_text.h"

namespace daruma {

Status CreateEmptyFileIfMissing(FileSystem* fs, const std::string& path) {
  if (fs->Exists(path)) return Status::Ok();
  DARUMA_ASSIGN_OR_RETURN(auto file, fs->Open(path, OpenMode::kCreate));
  return Status::Ok();
}

Result<OffsetCheckpointFile> OffsetCheckpointFile::Open(const std::string& path, FileSystem* fs) {
  DARUMA_RETURN_IF_ERROR(CreateEmptyFileIfMissing(fs, path));
  return OffsetCheckpointFile(path, fs);
}

Result<OffsetMap> OffsetCheckpointFile::Parse(std::string_view content, const std::string& path) {
  OffsetMap offsets;
  Status st = ParseTextCheckpoint(
      content, kVersion, path, [&offsets](const std::vector<std::string_view>& fields) {
        if (fields.size() != 3) return false;
        std::optional<int32_t> partition = ParseJavaInt(fields[1]);
        std::optional<int64_t> offset = ParseJavaLong(fields[2]);
        if (!partition || !offset) return false;
        offsets[TopicPartition{std::string(fields[0]), *partition}] = *offset;
        return true;
      });
  if (!st.ok()) return st;
  return offsets;
}

std::string OffsetCheckpointFile::Serialize(const OffsetMap& offsets) {
  std::vector<std::string> lines;
  lines.reserve(offsets.size());
  for (const auto& [tp, offset] : offsets) {
    lines.push_back(tp.topic + " " + std::to_string(tp.partition) + " " + std::to_string(offset));
  }
  return SerializeTextCheckpoint(kVersion, lines);
}

Result<OffsetMap> OffsetCheckpointFile::Read(std::string* text) const {
  DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, fs_->ReadFile(path_));
  if (text != nullptr) text->assign(AsStringView(bytes));
  return Parse(AsStringView(bytes), path_);
}

Status OffsetCheckpointFile::Write(const OffsetMap& offsets) const {
  return WriteSerialized(Serialize(offsets));
}

Status OffsetCheckpointFile::WriteSerialized(std::string_view text) const {
  return fs_->WriteFileAtomically(path_, AsBytes(text));
}

}  // namespace daruma
