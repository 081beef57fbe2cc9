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

// kafkaImport.topicIds: an entry that does not parse is dropped with a
// warning (a partition dir of that topic without partition.metadata then
// gets a new id, as before the import).
void ParseKafkaTopicIds(const std::string& path, const nlohmann::json& kafka,
                        KafkaConfigImportMark* mark, std::vector<std::string>* warnings) {
  auto ids = kafka.find("topicIds");
  if (ids == kafka.end()) return;
  if (!ids->is_object()) {
    warnings->push_back(fmt::format("{}: field kafkaImport.topicIds: expected an object", path));
    return;
  }
  for (const auto& [topic, text] : ids->items()) {
    Result<Uuid> id =
        text.is_string() ? Uuid::FromString(text.get<std::string>()) : Status::InvalidArgument("");
    if (!id.ok()) {
      warnings->push_back(
          fmt::format("{}: field kafkaImport.topicIds.{}: expected a topic id; the topic's "
                      "partition dirs without partition.metadata get a new one",
                      path, topic));
      continue;
    }
    mark->topic_ids[topic] = *id;
  }
}

// "creating" and "deleted": an entry that does not parse is dropped with a
// warning (a creation is then not completed, a deleted topic's leftover
// partition dirs are served again), the rest of the file still counts.
void ParseIntents(const std::string& path, const nlohmann::json& json, TopicConfigs* out,
                  std::vector<std::string>* warnings) {
  auto creating = json.find("creating");
  if (creating != json.end() && creating->is_object()) {
    for (const auto& [topic, entry] : creating->items()) {
      const auto id = entry.is_object() && entry.contains("id") && entry["id"].is_string()
                          ? Uuid::FromString(entry["id"].get<std::string>())
                          : Result<Uuid>(Status::InvalidArgument("expected a string"));
      const bool count_ok = entry.is_object() && entry.contains("partitions") &&
                            entry["partitions"].is_number_integer() &&
                            entry["partitions"].get<int64_t>() >= 1 &&
                            entry["partitions"].get<int64_t>() <= INT32_MAX;
      if (!id.ok() || !count_ok) {
        warnings->push_back(fmt::format(
            "{}: field creating.{}: expected {{\"id\": <topic id>, \"partitions\": <n >= 1>}}; "
            "the creation is not completed",
            path, topic));
        continue;
      }
      out->creating[topic] = {*id, int32_t(entry["partitions"].get<int64_t>())};
    }
  } else if (creating != json.end()) {
    warnings->push_back(fmt::format("{}: field creating: expected an object", path));
  }
  auto deleted = json.find("deleted");
  if (deleted != json.end() && deleted->is_object()) {
    for (const auto& [id_text, topic] : deleted->items()) {
      Result<Uuid> id = Uuid::FromString(id_text);
      if (!id.ok() || !topic.is_string()) {
        warnings->push_back(fmt::format(
            "{}: field deleted.{}: expected a topic id naming a topic; its leftover partition "
            "directories are not recognised",
            path, id_text));
        continue;
      }
      out->deleted[*id] = topic.get<std::string>();
    }
  } else if (deleted != json.end()) {
    warnings->push_back(fmt::format("{}: field deleted: expected an object", path));
  }
  auto kafka = json.find("kafkaImport");
  if (kafka != json.end()) {
    // Whatever its shape, it says an import happened: never import again.
    KafkaConfigImportMark mark;
    if (kafka->is_object() && kafka->contains("metadataLog") &&
        (*kafka)["metadataLog"].is_string() && kafka->contains("endOffset") &&
        (*kafka)["endOffset"].is_number_integer()) {
      mark.metadata_log = (*kafka)["metadataLog"].get<std::string>();
      mark.end_offset = (*kafka)["endOffset"].get<int64_t>();
      if (auto p = kafka->find("pending"); p != kafka->end() && p->is_boolean()) {
        mark.pending = p->get<bool>();
      }
      if (auto n = kafka->find("nextProducerId"); n != kafka->end() && n->is_number_integer()) {
        mark.next_producer_id = n->get<int64_t>();
      }
      ParseKafkaTopicIds(path, *kafka, &mark, warnings);
    } else {
      warnings->push_back(fmt::format(
          "{}: field kafkaImport: expected {{\"metadataLog\": <dir>, \"endOffset\": <n>}}", path));
    }
    out->kafka_import = std::move(mark);
  }
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
  ParseIntents(path, json, &out, warnings);
  return std::optional<TopicConfigs>(std::move(out));
}

std::string EncodeTopicConfigs(const TopicConfigs& configs) {
  nlohmann::json topics = nlohmann::json::object();
  for (const auto& [topic, overrides] : configs.topics) topics[topic] = overrides;
  nlohmann::json json = {
      {"version", kTopicConfigVersion}, {"generation", configs.generation}, {"topics", topics}};
  if (!configs.creating.empty()) {
    nlohmann::json creating = nlohmann::json::object();
    for (const auto& [topic, c] : configs.creating) {
      creating[topic] = {{"id", c.id.ToString()}, {"partitions", c.partitions}};
    }
    json["creating"] = std::move(creating);
  }
  if (!configs.deleted.empty()) {
    nlohmann::json deleted = nlohmann::json::object();
    for (const auto& [id, topic] : configs.deleted) deleted[id.ToString()] = topic;
    json["deleted"] = std::move(deleted);
  }
  if (configs.kafka_import) {
    json["kafkaImport"] = {{"metadataLog", configs.kafka_import->metadata_log},
                           {"endOffset", configs.kafka_import->end_offset},
                           {"pending", configs.kafka_import->pending},
                           {"nextProducerId", configs.kafka_import->next_producer_id}};
    if (!configs.kafka_import->topic_ids.empty()) {
      nlohmann::json ids = nlohmann::json::object();
      for (const auto& [topic, id] : configs.kafka_import->topic_ids) ids[topic] = id.ToString();
      json["kafkaImport"]["topicIds"] = std::move(ids);
    }
  }
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
