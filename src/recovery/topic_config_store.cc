#include "recovery/topic_config_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "log/meta_properties.h"
#include "recovery/kraft_topic_configs.h"
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

void TopicConfigStore::Load(const LogConfig& defaults, bool import_kafka,
                            const std::string& metadata_log_dir) {
  defaults_ = defaults;
  std::optional<TopicConfigs> best;
  std::string best_dir;
  bool unreadable = false;
  auto& dir_warnings = dirs_->warnings();
  for (auto& d : dirs_->dirs()) {
    if (dirs_->IsOffline(*d)) continue;
    std::vector<std::string>& warnings = dir_warnings[d->path];
    auto read = ReadTopicConfigsFile(fs_, d->path, &warnings);
    if (!read.ok()) {
      warnings.push_back(read.status().ToString() + " (topic overrides of this dir ignored)");
      unreadable = true;
      continue;
    }
    if (*read && (!best || (*read)->generation > best->generation)) {
      best = std::move(*read);
      best_dir = d->path;
    }
    if (warnings.empty()) dir_warnings.erase(d->path);
  }
  // Only a first start imports, or one after an import that could not be
  // done whole (its mark is pending): once Daruma has written its file (at
  // the import, and at any config change or topic creation) the topics'
  // configs are its own, even if an older Daruma wrote it without the mark.
  // A file that cannot be read may be Daruma's all the same: never imported
  // over.
  if (best) Adopt(std::move(*best), best_dir);
  if (import_kafka && !unreadable && (!best || (kafka_import_ && kafka_import_->pending))) {
    ImportKafkaTopicConfigs(metadata_log_dir);
  }
}

void TopicConfigStore::Adopt(TopicConfigs best, const std::string& best_dir) {
  auto& dir_warnings = dirs_->warnings();
  const std::string file = JoinPath(best_dir, kTopicConfigsFileName);
  std::lock_guard<std::mutex> checkpoint(dirs_->checkpoint_mu());
  std::lock_guard<std::mutex> lock(mu_);
  generation_ = best.generation;
  creating_ = std::move(best.creating);
  deleted_ = std::move(best.deleted);
  kafka_import_ = std::move(best.kafka_import);
  for (auto& [topic, overrides] : best.topics) {
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
    configs.kafka_import = kafka_import_;
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
  std::optional<Uuid> old_kafka_id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto it = deleted_.find(id); it != deleted_.end()) old_deleted = it->second;
    if (auto it = creating_.find(topic); it != creating_.end()) old_creation = it->second;
    deleted_[id] = topic;
    // A creation whose end was not recorded must not be completed now.
    creating_.erase(topic);
    // Nor may a topic created again under this name take the Kafka
    // metadata's id, once the deletion itself is forgotten.
    if (kafka_import_) {
      if (auto it = kafka_import_->topic_ids.find(topic); it != kafka_import_->topic_ids.end()) {
        old_kafka_id = it->second;
        kafka_import_->topic_ids.erase(it);
      }
    }
    if (import_report_) import_report_->topic_ids.erase(topic);
  }
  Status st = Persist();
  if (!st.ok()) {  // the topic stays, as the client is told: see BeginCreate
    std::lock_guard<std::mutex> lock(mu_);
    RestoreLocked(deleted_, id, old_deleted);
    RestoreLocked(creating_, topic, old_creation);
    if (kafka_import_ && old_kafka_id) kafka_import_->topic_ids[topic] = *old_kafka_id;
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

// Every live topic of the metadata gets its configs, whether or not a log
// dir here holds a partition of it (as every broker of a Kafka cluster knows
// every topic's configs): a dir that is offline now, or partitions copied in
// later, then find them too.
void TopicConfigStore::ImportKafkaTopicConfigs(const std::string& metadata_log_dir) {
  // metadata.log.dir, when set, is where Kafka kept it: no other copy is
  // taken instead (Kafka refuses to start without it).
  std::string metadata_dir;
  if (!metadata_log_dir.empty()) {
    metadata_dir = JoinPath(metadata_log_dir, kMetadataLogDirName);
  } else {
    for (auto& d : dirs_->dirs()) {
      const std::string candidate = JoinPath(d->path, kMetadataLogDirName);
      if (!dirs_->IsOffline(*d) && fs_->Exists(candidate)) {
        metadata_dir = candidate;
        break;
      }
    }
    if (metadata_dir.empty()) {
      // Not a dir a KRaft broker wrote, or no longer: a pending import has
      // nothing left to wait for (the operator took the metadata away, or
      // dropped a metadata.log.dir that named none).
      std::lock_guard<std::mutex> lock(mu_);
      if (kafka_import_ && kafka_import_->pending) {
        kafka_import_->pending = false;
        import_unrecorded_ = true;
        KafkaConfigImportReport report;
        report.notes.push_back(
            "no KRaft metadata log is found any more: the pending import of its topic configs "
            "is given up, and retention runs again");
        import_report_ = std::move(report);
      }
      return;
    }
  }

  KafkaConfigImportReport report;
  report.metadata_log = metadata_dir;
  Result<KraftTopicConfigs> read =
      fs_->Exists(metadata_dir)
          ? ReadKraftTopicConfigs(fs_, metadata_dir, NodeIdOfLogDirs())
          : Result<KraftTopicConfigs>(Status::NotFound(fmt::format(
                "metadata.log.dir {} holds no {}", metadata_log_dir, kMetadataLogDirName)));
  std::lock_guard<std::mutex> lock(mu_);
  // What is recorded: pending while the import could not be done whole, so
  // the next start tries again (say once the operator has put the metadata
  // log's missing files back), even after this one writes the file for
  // other reasons; the controller's next producer id either way.
  KafkaConfigImportMark mark{metadata_dir, 0, /*pending=*/true,
                             kafka_import_ ? kafka_import_->next_producer_id : -1};
  if (!read.ok()) {
    report.complete = false;
    report.error = read.status().ToString();
  } else {
    report.snapshot = read->snapshot;
    report.end_offset = read->end_offset;
    report.complete = read->complete;
    report.broker_configs = std::move(read->broker_configs);
    report.cluster_defaults = std::move(read->cluster_defaults);
    report.next_producer_id = read->next_producer_id;
    if (read->complete) {
      // A pending import's retry: not the ids of topics deleted here since.
      for (auto it = read->topic_ids.begin(); it != read->topic_ids.end();) {
        const bool deleted = deleted_.count(it->second) > 0 ||
                             std::any_of(deleted_.begin(), deleted_.end(), [&](const auto& entry) {
                               return entry.second == it->first;
                             });
        it = deleted ? read->topic_ids.erase(it) : std::next(it);
      }
      mark.topic_ids = read->topic_ids;
      report.topic_ids = std::move(read->topic_ids);
    }
    report.notes = std::move(read->notes);
    mark.end_offset = read->end_offset;
    mark.pending = !read->complete;
    mark.next_producer_id = std::max(mark.next_producer_id, read->next_producer_id);
  }
  // Topics configured here since (a pending import's retry) keep theirs.
  for (auto& [topic, configs] : report.complete ? read->topics : decltype(read->topics){}) {
    if (overrides_.count(topic) > 0) continue;
    LogConfig config = defaults_;
    TopicConfigOverrides taken;
    for (const auto& [name, value] : configs) {
      Status st = ApplyTopicConfigOverride(name, value, &config);
      if (st.ok()) {
        taken[name] = value;
      } else {
        report.refused.push_back(fmt::format("{}: {}={}: {}", topic, name, value, st.message()));
      }
    }
    if (taken.empty()) continue;
    configs_[topic] = config;
    overrides_[topic] = taken;
    report.imported[topic] = std::move(taken);
  }
  kafka_import_ = std::move(mark);
  import_unrecorded_ = true;
  import_report_ = std::move(report);
}

// The node id of the broker that wrote the log dirs (meta.properties), whose
// own dynamic configs apply over the cluster's defaults; nullopt if none
// says.
std::optional<int32_t> TopicConfigStore::NodeIdOfLogDirs() const {
  for (auto& d : dirs_->dirs()) {
    if (dirs_->IsOffline(*d)) continue;
    Result<MetaProperties> meta = MetaProperties::Read(JoinPath(d->path, "meta.properties"), fs_);
    if (meta.ok() && meta->node_id) return meta->node_id;
  }
  return std::nullopt;
}

std::optional<Uuid> TopicConfigStore::KafkaTopicId(const std::string& topic) const {
  std::lock_guard<std::mutex> lock(mu_);
  // The recorded mark's ids (this start's import, or an earlier one's); this
  // start's report still has them where recording the import failed.
  if (kafka_import_) {
    if (auto it = kafka_import_->topic_ids.find(topic); it != kafka_import_->topic_ids.end()) {
      return it->second;
    }
  }
  if (!import_report_) return std::nullopt;
  auto it = import_report_->topic_ids.find(topic);
  if (it == import_report_->topic_ids.end()) return std::nullopt;
  return it->second;
}

bool TopicConfigStore::kafka_import_pending() const {
  std::lock_guard<std::mutex> lock(mu_);
  return kafka_import_ && kafka_import_->pending;
}

std::optional<int64_t> TopicConfigStore::kafka_next_producer_id() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!kafka_import_ || kafka_import_->next_producer_id < 0) return std::nullopt;
  return kafka_import_->next_producer_id;
}

void TopicConfigStore::PersistKafkaImport() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!import_unrecorded_) return;
    import_unrecorded_ = false;
  }
  Status st = Persist();
  std::lock_guard<std::mutex> lock(mu_);
  if (st.ok() || !import_report_) return;
  import_report_->not_recorded = st.ToString();
  // No file was written: the next start imports again.
  kafka_import_.reset();
}

std::optional<KafkaConfigImportReport> TopicConfigStore::kafka_import_report() const {
  std::lock_guard<std::mutex> lock(mu_);
  return import_report_;
}

}  // namespace daruma
