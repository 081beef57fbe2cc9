#include "recovery/scrub_findings.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "recovery/json_document.h"

namespace daruma {
namespace {

constexpr int kFindingsVersion = 1;

Status Bad(const std::string& path, const std::string& field, const std::string& what) {
  return Status::Corruption(fmt::format("{}: field {}: {}", path, field, what));
}

Result<int64_t> Int(const std::string& path, const nlohmann::json& object, const std::string& where,
                    const char* key, int64_t min) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer() || it->get<int64_t>() < min) {
    return Bad(path, where + key, fmt::format("expected an integer >= {}", min));
  }
  return it->get<int64_t>();
}

Result<std::string> String(const std::string& path, const nlohmann::json& object,
                           const std::string& where, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_string()) return Bad(path, where + key, "expected a string");
  return it->get<std::string>();
}

Result<ScrubFinding> ParseFinding(const std::string& path, const nlohmann::json& j, size_t i) {
  const std::string where = fmt::format("findings[{}].", i);
  if (!j.is_object()) return Bad(path, fmt::format("findings[{}]", i), "expected an object");
  ScrubFinding f;
  DARUMA_ASSIGN_OR_RETURN(f.tp.topic, String(path, j, where, "topic"));
  DARUMA_ASSIGN_OR_RETURN(int64_t partition, Int(path, j, where, "partition", 0));
  if (partition > INT32_MAX) return Bad(path, where + "partition", "expected an int32");
  f.tp.partition = int32_t(partition);
  DARUMA_ASSIGN_OR_RETURN(f.segment_base, Int(path, j, where, "segment", 0));
  DARUMA_ASSIGN_OR_RETURN(f.file, String(path, j, where, "file"));
  ScrubDamage& d = f.damage;
  DARUMA_ASSIGN_OR_RETURN(d.position, Int(path, j, where, "position", 0));
  DARUMA_ASSIGN_OR_RETURN(d.end_position, Int(path, j, where, "endPosition", d.position + 1));
  DARUMA_ASSIGN_OR_RETURN(d.first_offset, Int(path, j, where, "firstOffset", 0));
  DARUMA_ASSIGN_OR_RETURN(d.end_offset, Int(path, j, where, "endOffset", d.first_offset));
  DARUMA_ASSIGN_OR_RETURN(std::string kind, String(path, j, where, "kind"));
  std::optional<DamageKind> parsed = ParseDamageKind(kind);
  if (!parsed) return Bad(path, where + "kind", fmt::format("unknown kind \"{}\"", kind));
  d.kind = *parsed;
  DARUMA_ASSIGN_OR_RETURN(d.what, String(path, j, where, "what"));
  DARUMA_ASSIGN_OR_RETURN(f.found_ms, Int(path, j, where, "foundMs", 0));
  if (j.contains("segmentSize")) {
    DARUMA_ASSIGN_OR_RETURN(f.segment_size, Int(path, j, where, "segmentSize", 0));
  }
  if (j.contains("segmentModifiedMs")) {
    DARUMA_ASSIGN_OR_RETURN(f.segment_modified_ms, Int(path, j, where, "segmentModifiedMs", 0));
  }
  return f;
}

}  // namespace

nlohmann::json ScrubFindingToJson(const ScrubFinding& f) {
  nlohmann::json entry = {{"topic", f.tp.topic},
                          {"partition", f.tp.partition},
                          {"segment", f.segment_base},
                          {"file", f.file},
                          {"position", f.damage.position},
                          {"endPosition", f.damage.end_position},
                          {"firstOffset", f.damage.first_offset},
                          {"endOffset", f.damage.end_offset},
                          {"kind", DamageKindName(f.damage.kind)},
                          {"what", f.damage.what},
                          {"foundMs", f.found_ms}};
  if (f.segment_size >= 0) entry["segmentSize"] = f.segment_size;
  if (f.segment_modified_ms >= 0) entry["segmentModifiedMs"] = f.segment_modified_ms;
  return entry;
}

std::string EncodeScrubFindings(const ScrubFindingsFile& file) {
  nlohmann::json findings = nlohmann::json::array();
  for (const ScrubFinding& f : file.findings) {
    findings.push_back(ScrubFindingToJson(f));
  }
  nlohmann::json j;
  j["version"] = kFindingsVersion;
  j["lastPassCompletedMs"] =
      file.last_pass_completed_ms ? nlohmann::json(*file.last_pass_completed_ms) : nlohmann::json();
  j["findings"] = std::move(findings);
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

Result<ScrubFindingsFile> DecodeScrubFindings(const std::string& path, std::string_view bytes) {
  DARUMA_ASSIGN_OR_RETURN(nlohmann::json json, ParseJsonDocument(path, bytes));
  if (!json.is_object()) return Bad(path, "(root)", "expected an object");
  DARUMA_ASSIGN_OR_RETURN(int64_t version, Int(path, json, "", "version", 0));
  if (version != kFindingsVersion) {
    return Bad(path, "version", fmt::format("expected {}, found {}", kFindingsVersion, version));
  }
  ScrubFindingsFile out;
  auto last = json.find("lastPassCompletedMs");
  if (last != json.end() && !last->is_null()) {
    DARUMA_ASSIGN_OR_RETURN(out.last_pass_completed_ms,
                            Int(path, json, "", "lastPassCompletedMs", 0));
  }
  auto findings = json.find("findings");
  if (findings == json.end() || !findings->is_array()) {
    return Bad(path, "findings", "expected an array");
  }
  for (size_t i = 0; i < findings->size(); ++i) {
    DARUMA_ASSIGN_OR_RETURN(ScrubFinding f, ParseFinding(path, (*findings)[i], i));
    out.findings.push_back(std::move(f));
  }
  return out;
}

Result<ScrubFindingsFile> ReadScrubFindings(FileSystem* fs, const std::string& log_dir) {
  const std::string path = JoinPath(log_dir, kScrubFindingsFileName);
  if (!fs->Exists(path)) return ScrubFindingsFile{};
  DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, fs->ReadFile(path));
  return DecodeScrubFindings(
      path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
}

Status WriteScrubFindings(FileSystem* fs, const std::string& log_dir,
                          const ScrubFindingsFile& findings) {
  const std::string text = EncodeScrubFindings(findings);
  return fs->WriteFileAtomically(
      JoinPath(log_dir, kScrubFindingsFileName),
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

Status RemoveScrubFindings(FileSystem* fs, const std::string& log_dir, const TopicPartition& tp,
                           std::optional<int64_t> segment_base) {
  DARUMA_ASSIGN_OR_RETURN(ScrubFindingsFile file, ReadScrubFindings(fs, log_dir));
  const size_t erased = std::erase_if(file.findings, [&](const ScrubFinding& f) {
    return f.tp == tp && (!segment_base || f.segment_base == *segment_base);
  });
  if (erased == 0) return Status::Ok();
  return WriteScrubFindings(fs, log_dir, file);
}

}  // namespace daruma
