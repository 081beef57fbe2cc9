#include "recovery/topic_config_file.h"

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "recovery/json_document.h"

namespace daruma {
namespace {

constexpr int kTopicConfigVersion = 1;

Status BadTopicConfig(const std::string& path, const std::string& field, const std::string& what) {
  return Status::Corruption(fmt::format("{}: field {}: {}", path, field, what));
}

// The overrides of one topic; entries that are not strings are dropped.
TopicConfigOverrides ParseTopic(const std::string& path, const std::string& topic,
                                const nlohmann::json& entry, std::vector<std::string>* warnings) {
  TopicConfigOverrides out;
  for (const auto& [name, value] : entry.items()) {
    if (!value.is_string()) {
      warnings->push_back(
          fmt::format("{}: field topics.{}.{}: expected a string, found {}; "
                      "the broker default is used",
                      path, topic, name, value.type_name()));
      continue;
    }
    out[name] = value.get<std::string>();
  }
  return out;
}

}  // namespace

Result<std::optional<TopicConfigs>> ReadTopicConfigsFile(FileSystem* fs, const std::string& log_dir,
                                                         std::vector<std::string>* warnings) {
  const std::string path = JoinPath(log_dir, kTopicConfigsFileName);
  if (!fs->Exists(path)) return std::optional<TopicConfigs>();
  DARUMA_ASSIGN_OR_RETURN(std::vector<uint8_t> bytes, fs->ReadFile(path));
  DARUMA_ASSIGN_OR_RETURN(nlohmann::json json, ParseJsonDocument(path, bytes));
  if (!json.is_object()) return BadTopicConfig(path, "(root)", "expected an object");
  auto version = json.find("version");
  if (version == json.end() || !version->is_number_integer()) {
    return BadTopicConfig(path, "version", "expected an integer");
  }
  if (version->get<int64_t>() != kTopicConfigVersion) {
    return BadTopicConfig(
        path, "version",
        fmt::format("expected {}, found {}", kTopicConfigVersion, version->get<int64_t>()));
  }
  auto generation = json.find("generation");
  if (generation == json.end() || !generation->is_number_integer() ||
      generation->get<int64_t>() < 0) {
    return BadTopicConfig(path, "generation", "expected an integer >= 0");
  }
  auto topics = json.find("topics");
  if (topics == json.end() || !topics->is_object())
    return BadTopicConfig(path, "topics", "expected an object");
  TopicConfigs out;
  out.generation = generation->get<int64_t>();
  for (const auto& [topic, entry] : topics->items()) {
    if (!entry.is_object()) {
      warnings->push_back(fmt::format(
          "{}: field topics.{}: expected an object, found {}; the topic uses the broker defaults",
          path, topic, entry.type_name()));
      continue;
    }
    out.topics[topic] = ParseTopic(path, topic, entry, warnings);
  }
  return std::optional<TopicConfigs>(std::move(out));
}

std::string EncodeTopicConfigs(const TopicConfigs& configs) {
  nlohmann::json topics = nlohmann::json::object();
  for (const auto& [topic, overrides] : configs.topics) topics[topic] = overrides;
  nlohmann::json json = {
      {"version", kTopicConfigVersion}, {"generation", configs.generation}, {"topics", topics}};
  return json.dump() + "\n";
}

Status WriteTopicConfigsFile(FileSystem* fs, const std::string& log_dir,
                             const TopicConfigs& configs) {
  const std::string text = EncodeTopicConfigs(configs);
  return fs->WriteFileAtomically(
      JoinPath(log_dir, kTopicConfigsFileName),
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace daruma
