#include "recovery/topic_config_check.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "log/topic_config_overrides.h"
#include "recovery/topic_config_file.h"

namespace daruma {
namespace {

constexpr char kEditAction[] =
    "edit the file by hand (repair never rewrites it); until then the broker runs the topic "
    "on the broker default";

// 1-based line of byte `pos` of `text`.
int64_t LineOf(const std::string& text, int64_t pos) {
  return 1 + std::count(text.begin(), text.begin() + pos, '\n');
}

// Byte position of `"key"` after byte `from`, -1 if not found.
int64_t FindKey(const std::string& text, const std::string& key, int64_t from) {
  if (from < 0) return -1;
  const size_t at = text.find(nlohmann::json(key).dump(), size_t(from));
  return at == std::string::npos ? -1 : int64_t(at);
}

std::string AtLine(const std::string& text, int64_t pos) {
  return pos < 0 ? std::string() : fmt::format(" (line {})", LineOf(text, pos));
}

// Where the JSON syntax breaks, -1 when it parses (the error is elsewhere).
int64_t SyntaxErrorPosition(const std::string& text) {
  try {
    const nlohmann::json parsed = nlohmann::json::parse(text);
    (void)parsed;
  } catch (const nlohmann::json::parse_error& e) {
    return e.byte == 0 ? 0 : int64_t(e.byte - 1);  // e.byte counts from 1
  }
  return -1;
}

void Add(LogDirCheck* d, std::string file, int64_t position, std::string what, std::string action,
         bool operator_only) {
  CheckProblem p{DamageKind::kCorruptMetadata,
                 std::move(file),
                 position,
                 std::nullopt,
                 std::move(what),
                 std::move(action)};
  p.operator_only = operator_only;
  d->problems.push_back(std::move(p));
}

// Unknown names and bad values, each at its key.
void CheckValues(const std::string& path, const std::string& text, const TopicConfigs& configs,
                 LogDirCheck* d) {
  for (const auto& [topic, overrides] : configs.topics) {
    const int64_t topic_at = FindKey(text, topic, FindKey(text, "topics", 0));
    d->topic_config_topics.push_back({topic, topic_at, topic_at < 0 ? -1 : LineOf(text, topic_at)});
    for (const auto& [name, value] : overrides) {
      const int64_t at = FindKey(text, name, topic_at);
      LogConfig scratch;
      Status st = ApplyTopicConfigOverride(name, value, &scratch);
      if (st.ok()) continue;
      const std::string what = IsKnownTopicConfigName(name)
                                   ? fmt::format("key topics.{}.{}{}: bad value: {}", topic, name,
                                                 AtLine(text, at), st.message())
                                   : fmt::format("key topics.{}.{}{}: unknown topic config {}",
                                                 topic, name, AtLine(text, at), name);
      Add(d, path, at, what, kEditAction, true);
    }
  }
}

}  // namespace

void CheckTopicConfigsFile(FileSystem* fs, LogDirCheck* d) {
  const std::string path = JoinPath(d->path, kTopicConfigsFileName);
  if (!fs->Exists(path)) return;
  auto bytes = fs->ReadFile(path);
  if (!bytes.ok()) {
    Add(d, path, -1, bytes.status().ToString(), "check the disk", true);
    return;
  }
  const std::string text(bytes->begin(), bytes->end());
  std::vector<std::string> warnings;
  auto read = ReadTopicConfigsFile(fs, d->path, &warnings);
  if (!read.ok()) {
    const int64_t at = SyntaxErrorPosition(text);
    d->unreadable_topic_configs_bytes = int64_t(text.size());
    Add(d, path, at,
        read.status().message() + AtLine(text, at) +
            "; the broker ignores the file, so every topic runs on the broker defaults",
        fmt::format("fix it by hand, or copy another log dir's {} here; `daruma repair "
                    "--max-corrupt-bytes {}` sets it aside as {}.corrupt",
                    kTopicConfigsFileName, text.size(), kTopicConfigsFileName),
        false);
    return;
  }
  for (const std::string& w : warnings) Add(d, path, -1, w, kEditAction, true);
  if (*read) CheckValues(path, text, **read, d);
}

void CheckTopicConfigTopics(std::vector<LogDirCheck>* dirs) {
  std::set<std::string> topics;
  for (const LogDirCheck& d : *dirs) {
    for (const PartitionCheck& p : d.partitions) topics.insert(p.tp.topic);
  }
  for (LogDirCheck& d : *dirs) {
    const std::string path = JoinPath(d.path, kTopicConfigsFileName);
    for (const TopicConfigEntry& e : d.topic_config_topics) {
      if (topics.count(e.topic) > 0) continue;
      Add(&d, path, e.position,
          fmt::format("key topics.{}{}: overrides for a topic with no partition directory in the "
                      "checked log dirs (left over from a deleted topic?)",
                      e.topic, e.line < 0 ? std::string() : fmt::format(" (line {})", e.line)),
          "remove the entry by hand if the topic is gone (repair never rewrites the file)", true);
    }
  }
}

std::string SetAsideTopicConfigsPath(FileSystem* fs, const std::string& log_dir) {
  const std::string base = JoinPath(log_dir, std::string(kTopicConfigsFileName) + ".corrupt");
  std::string path = base;
  for (int n = 1; fs->Exists(path); ++n) path = base + "." + std::to_string(n);
  return path;
}

}  // namespace daruma
