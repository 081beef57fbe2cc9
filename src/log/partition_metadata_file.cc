#include "log/partition_metadata_file.h"

#include <optional>
#include <vector>

#include "common/bytes.h"
#include "common/printable_text.h"
#include "log/checkpoint_text.h"

namespace daruma {
namespace {

// Java's line.split(":\\s+"): fields separated by ':' followed by at least one
// whitespace character; trailing empty fields removed.
std::vector<std::string_view> SplitOnColonWhitespace(std::string_view line) {
  std::vector<std::string_view> fields;
  size_t start = 0;
  size_t pos = 0;
  while ((pos = line.find(':', pos)) != std::string_view::npos) {
    size_t end = pos + 1;
    while (end < line.size() && IsJavaWhitespace(line[end])) ++end;
    if (end == pos + 1) {
      ++pos;
      continue;
    }
    fields.push_back(line.substr(start, pos - start));
    start = pos = end;
  }
  fields.push_back(line.substr(start));
  while (fields.size() > 1 && fields.back().empty()) fields.pop_back();
  return fields;
}

// The two lines of the file (Java readLine: "\n", "\r" or "\r\n" end a line).
std::vector<std::string_view> FirstLines(std::string_view text, size_t count) {
  std::vector<std::string_view> lines;
  size_t pos = 0;
  while (lines.size() < count && pos < text.size()) {
    size_t end = text.find_first_of("\r\n", pos);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(pos, end - pos));
    pos = end + 1;
    if (end < text.size() && text[end] == '\r' && pos < text.size() && text[pos] == '\n') ++pos;
  }
  return lines;
}

Status MalformedMetadata(const std::string& path, int line_number, std::string_view line) {
  return Status::Corruption("malformed line " + std::to_string(line_number) +
                            " in partition metadata file " + path + ": '" + PrintableText(line) +
                            "'");
}

}  // namespace

Result<PartitionMetadata> PartitionMetadataFile::Parse(std::string_view content,
                                                       const std::string& path) {
  std::vector<std::string_view> lines = FirstLines(content, 2);
  if (lines.empty()) return MalformedMetadata(path, 1, "");
  std::vector<std::string_view> version_fields = SplitOnColonWhitespace(lines[0]);
  if (version_fields.size() != 2) return MalformedMetadata(path, 1, lines[0]);
  std::optional<int32_t> version = ParseJavaInt(version_fields[1]);
  if (!version) return MalformedMetadata(path, 1, lines[0]);
  if (*version < 0) {
    return Status::Corruption("unrecognized version " + std::to_string(*version) +
                              " of partition metadata file " + path);
  }
  if (lines.size() < 2) return MalformedMetadata(path, 2, "");
  std::vector<std::string_view> id_fields = SplitOnColonWhitespace(lines[1]);
  if (id_fields.size() != 2) return MalformedMetadata(path, 2, lines[1]);
  Result<Uuid> id = Uuid::FromString(id_fields[1]);
  if (!id.ok()) {
    return Status::Corruption("partition metadata file " + path +
                              " line 2: " + id.status().message());
  }
  if (id->IsZero()) {
    return Status::Corruption("invalid topic ID " + id->ToString() +
                              " (the zero uuid) in partition metadata file " + path);
  }
  return PartitionMetadata{*version, *id};
}

std::string PartitionMetadataFile::Serialize(const Uuid& topic_id) {
  return "version: " + std::to_string(kCurrentVersion) + "\ntopic_id: " + topic_id.ToString();
}

Result<PartitionMetadata> PartitionMetadataFile::Read() const {
  DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, fs_->ReadFile(path_));
  return Parse(AsStringView(bytes), path_);
}

Status PartitionMetadataFile::Write(const Uuid& topic_id) const {
  return fs_->WriteFileAtomically(path_, AsBytes(Serialize(topic_id)));
}

}  // namespace daruma
