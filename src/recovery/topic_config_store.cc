#include "recovery/topic_config_store.h"

#include <fmt/format.h>

#include <optional>
#include <utility>
#include <vector>

#include "recovery/topic_config_file.h"

namespace daruma {
namespace {

// Puts map[key] back to what it was (absent when `old` is nullopt).
template <typename Map, typename Key, typename Value>
void RestoreLocked(Map& map, const Key& key, const std::optional<Value>& old) {
  if (old) {
    map[key] = *old;
  } else {
    map.erase(key);
  }
}

}  // namespace

void TopicConfigStore::Load(const LogConfig& defaults) {
  defaults_ = defaults;
  std::optional<TopicConfigs> best;
  std::string best_dir;
  auto& dir_warnings = dirs_->warnings();
  for (auto& d : dirs_->dirs()) {
    if (dirs_->IsOffline(*d)) continue;
    std::vector<std::string>& warnings = dir_warnings[d->path];
    auto read = ReadTopicConfigsFile(fs_, d->path, &warnings);
    if (!read.ok()) {
      warnings.push_back(read.status().ToString() + " (topic overrides of this dir ignored)");
      continue;
    }
    if (*read && (!best || (*read)->generation > best->generation)) {
      best = std::move(*read);
      best_dir = d->path;
    }
    if (warnings.empty()) dir_warnings.erase(d->path);
  }
  if (!best) return;
  const std::string file = JoinPath(best_dir, kTopicConfigsFileName);
  std::lock_guard<std::mutex> checkpoint(dirs_->checkpoint_mu());
  std::lock_guard<std::mutex> lock(mu_);
  generation_ = best->generation;
  creating_ = std::move(best->creating);
  deleted_ = std::move(best->deleted);
  for (auto& [topic, overrides] : best->topics) {
    LogConfig config = defaults_;
    for (auto it = overrides.begin(); it != overrides.end();) {
      Status st = ApplyTopicConfigOverride(it->first, it->second, &config);
      if (st.ok()) {
        ++it;
        continue;
      }
      dir_warnings[best_dir].push_back(
          fmt::format("{}: field topics.{}.{}: {}; the broker default is used", file, topic,
                      it->first, st.message()));
      it = overrides.erase(it);
    }
    configs_[topic] = config;
    overrides_[topic] = std::move(overrides);
  }
}

// Snapshot and write happen under the dirs' checkpoint lock, so the last
// writer always writes the newest state and generations never repeat.
Status TopicConfigStore::Persist() {
  std::lock_guard<std::mutex> checkpoint(dirs_->checkpoint_mu());
  TopicConfigs configs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    configs.topics = overrides_;
    configs.creating = creating_;
    configs.deleted = deleted_;
  }
  configs.generation = ++generation_;
  Status last =
      Status::IoError("no serving log dir to write " + std::string(kTopicConfigsFileName));
  bool written = false;
  for (auto& d : dirs_->dirs()) {
    if (!dirs_->IsServing(*d)) continue;
    Status st = WriteTopicConfigsFile(fs_, d->path, configs);
    if (st.ok()) {
      written = true;
      continue;
    }
    last = st.WithContext("writing topic configs");
    jobs_->OnJobError(d->path, last);
  }
  return written ? Status::Ok() : last;
}

bool TopicConfigStore::AnyDirOffline() const {
  for (const auto& d : dirs_->dirs()) {
    if (dirs_->IsOffline(*d)) return true;
  }
  return false;
}

Status TopicConfigStore::BeginCreate(const std::string& topic, const PendingTopicCreation& creation,
                                     const LogConfig& config,
                                     const TopicConfigOverrides& overrides) {
  // Restored if no dir takes the file: an intent the client was told failed
  // must not reach the disk with the next write for another topic.
  std::optional<LogConfig> old_config;
  std::optional<TopicConfigOverrides> old_overrides;
  std::optional<PendingTopicCreation> old_creation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = configs_.find(topic); it != configs_.end()) old_config = it->second;
    if (auto it = overrides_.find(topic); it != overrides_.end()) old_overrides = it->second;
    if (auto it = creating_.find(topic); it != creating_.end()) old_creation = it->second;
    if (!overrides.empty()) {
      configs_[topic] = config;
      overrides_[topic] = overrides;
    }
    creating_[topic] = creation;
  }
  Status st = Persist();
  if (!st.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    RestoreLocked(configs_, topic, old_config);
    RestoreLocked(overrides_, topic, old_overrides);
    RestoreLocked(creating_, topic, old_creation);
  }
  return st;
}

void TopicConfigStore::EndCreate(const std::string& topic) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (creating_.erase(topic) == 0) return;
  }
  (void)Persist();  // a failure leaves the intent, which the next start completes: no harm
}

std::map<std::string, PendingTopicCreation> TopicConfigStore::PendingCreations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return creating_;
}

Status TopicConfigStore::RecordDeletion(const std::string& topic, const Uuid& id) {
  std::optional<std::string> old_deleted;
  std::optional<PendingTopicCreation> old_creation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = deleted_.find(id); it != deleted_.end()) old_deleted = it->second;
    if (auto it = creating_.find(topic); it != creating_.end()) old_creation = it->second;
    deleted_[id] = topic;
    // A creation whose end was not recorded must not be completed now.
    creating_.erase(topic);
  }
  Status st = Persist();
  if (!st.ok()) {  // the topic stays, as the client is told: see BeginCreate
    std::lock_guard<std::mutex> lock(mu_);
    RestoreLocked(deleted_, id, old_deleted);
    RestoreLocked(creating_, topic, old_creation);
  }
  return st;
}

bool TopicConfigStore::AnyLogDirOffline() const {
  return AnyDirOffline();
}

bool TopicConfigStore::IsDeleted(const Uuid& id) const {
  std::lock_guard<std::mutex> lock(mu_);
  return deleted_.count(id) > 0;
}

void TopicConfigStore::ForgetDeletion(const Uuid& id) {
  if (AnyDirOffline()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (deleted_.erase(id) == 0) return;
  }
  (void)Persist();
}

void TopicConfigStore::ForgetDeletions() {
  if (AnyDirOffline()) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (deleted_.empty()) return;
    deleted_.clear();
  }
  (void)Persist();
}

void TopicConfigStore::Set(const std::string& topic, const LogConfig& config,
                           const TopicConfigOverrides& overrides) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    configs_[topic] = config;
    overrides_[topic] = overrides;
  }
  std::vector<std::pair<Log*, bool>> logs;  // and whether it is the live replica
  {
    std::lock_guard<std::mutex> lock(dirs_->mu());
    for (const auto& d : dirs_->dirs()) {
      for (const auto& [path, log] : d->logs) {
        if (log->topic_partition().topic != topic) continue;
        logs.emplace_back(log.get(), d->IsLive(path));
      }
    }
  }
  for (auto [log, live] : logs) {
    log->UpdateConfig(config);
    if (live) jobs_->UpdateCleanerRegistration(log, config);
  }
  (void)Persist();  // errors went to the failure channel or the job errors
}

void TopicConfigStore::ForgetIfUnused(const std::string& topic) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (configs_.count(topic) == 0 && overrides_.count(topic) == 0) return;
  }
  {
    std::lock_guard<std::mutex> lock(dirs_->mu());
    for (const auto& d : dirs_->dirs()) {
      for (const auto& [path, log] : d->logs) {
        if (d->IsCurrent(path) && log->topic_partition().topic == topic) return;
      }
    }
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    configs_.erase(topic);
    overrides_.erase(topic);
  }
  (void)Persist();  // errors went to the failure channel or the job errors
}

LogConfig TopicConfigStore::ConfigFor(const std::string& topic) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = configs_.find(topic);
  return it == configs_.end() ? defaults_ : it->second;
}

TopicConfigOverrides TopicConfigStore::OverridesOf(const std::string& topic) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = overrides_.find(topic);
  return it == overrides_.end() ? TopicConfigOverrides{} : it->second;
}

}  // namespace daruma
