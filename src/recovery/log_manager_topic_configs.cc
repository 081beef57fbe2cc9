// LogManager's topic configs: per-topic overrides applied to the topic's logs
// (Kafka's updateTopicConfig) and persisted in daruma-topic-configs.json at
// the root of every log dir (recovery/topic_config_file.h). Contract in
// log_manager.h.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "recovery/log_manager.h"
#include "recovery/log_manager_dir_state.h"
#include "recovery/topic_config_file.h"

namespace daruma {

// Reads the file of every online dir and keeps the highest generation that
// parses. Every problem is a warning of the dir it came from; the topics and
// configs concerned run on the broker defaults.
void LogManager::LoadTopicConfigs() {
  std::optional<TopicConfigs> best;
  std::string best_dir;
  for (auto& d : dirs_) {
    if (failure_channel_.IsOffline(d->path)) continue;
    std::vector<std::string>& warnings = dir_warnings_[d->path];
    auto read = ReadTopicConfigsFile(options_.fs, d->path, &warnings);
    if (!read.ok()) {
      warnings.push_back(read.status().ToString() + " (topic overrides of this dir ignored)");
      continue;
    }
    if (*read && (!best || (*read)->generation > best->generation)) {
      best = std::move(*read);
      best_dir = d->path;
    }
    if (warnings.empty()) dir_warnings_.erase(d->path);
  }
  if (!best) return;
  const std::string file = JoinPath(best_dir, kTopicConfigsFileName);
  std::lock_guard<std::mutex> lock(mu_);
  topic_configs_generation_ = best->generation;
  for (auto& [topic, overrides] : best->topics) {
    LogConfig config = config_;
    for (auto it = overrides.begin(); it != overrides.end();) {
      Status st = ApplyTopicConfigOverride(it->first, it->second, &config);
      if (st.ok()) {
        ++it;
        continue;
      }
      dir_warnings_[best_dir].push_back(
          fmt::format("{}: field topics.{}.{}: {}; the broker default is used", file, topic,
                      it->first, st.message()));
      it = overrides.erase(it);
    }
    topic_configs_[topic] = config;
    topic_overrides_[topic] = std::move(overrides);
  }
}

// Writes the current overrides to every serving dir. Snapshot and write
// happen under checkpoint_mu_, so the last writer always writes the newest
// state and generations never repeat.
void LogManager::PersistTopicConfigs() {
  std::lock_guard<std::mutex> checkpoint(checkpoint_mu_);
  TopicConfigs configs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    configs.topics = topic_overrides_;
  }
  configs.generation = ++topic_configs_generation_;
  for (auto& d : dirs_) {
    if (!IsServing(*d)) continue;
    Status st = WriteTopicConfigsFile(options_.fs, d->path, configs);
    if (!st.ok()) OnJobError(d->path, st.WithContext("writing topic configs"));
  }
}

void LogManager::SetTopicConfig(const std::string& topic, const LogConfig& config) {
  SetTopicConfig(topic, config, DiffTopicConfig(config_, config));
}

void LogManager::SetTopicConfig(const std::string& topic, const LogConfig& config,
                                const TopicConfigOverrides& overrides) {
  std::vector<std::pair<Log*, bool>> logs;  // and whether it is the live replica
  {
    std::lock_guard<std::mutex> lock(mu_);
    topic_configs_[topic] = config;
    topic_overrides_[topic] = overrides;
    for (const auto& d : dirs_) {
      for (const auto& [path, log] : d->logs) {
        if (log->topic_partition().topic != topic) continue;
        auto kind = d->kinds.find(path);
        logs.emplace_back(log.get(), kind == d->kinds.end() || kind->second == DirKind::kLive);
      }
    }
  }
  for (auto [log, live] : logs) {
    log->UpdateConfig(config);
    if (live) UpdateCleanerRegistration(log, config);
  }
  PersistTopicConfigs();
}

void LogManager::ForgetTopicConfigIfUnused(const std::string& topic) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (topic_configs_.count(topic) == 0 && topic_overrides_.count(topic) == 0) return;
    for (const auto& d : dirs_) {
      for (const auto& [path, log] : d->logs) {
        auto kind = d->kinds.find(path);
        const bool current = kind == d->kinds.end() || kind->second == DirKind::kLive ||
                             kind->second == DirKind::kFuture;
        if (current && log->topic_partition().topic == topic) return;
      }
    }
    topic_configs_.erase(topic);
    topic_overrides_.erase(topic);
  }
  PersistTopicConfigs();
}

LogConfig LogManager::ConfigFor(const std::string& topic) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topic_configs_.find(topic);
  return it == topic_configs_.end() ? config_ : it->second;
}

TopicConfigOverrides LogManager::TopicOverridesOf(const std::string& topic) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = topic_overrides_.find(topic);
  return it == topic_overrides_.end() ? TopicConfigOverrides{} : it->second;
}

}  // namespace daruma
