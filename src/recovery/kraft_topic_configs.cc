#include "recovery/kraft_topic_configs.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <utility>

#include "common/bytes.h"
#include "log/log_file_names.h"
#include "record/control_record.h"
#include "record/file_batch_reader.h"
#include "record/record_batch.h"

namespace daruma {
namespace {

constexpr std::string_view kSnapshotSuffix = ".checkpoint";
constexpr uint32_t kFrameVersion = 1;  // Kafka's AbstractApiMessageSerde
constexpr uint32_t kTopicRecord = 2;
constexpr uint32_t kConfigRecord = 4;
constexpr uint32_t kRemoveTopicRecord = 9;
constexpr uint32_t kProducerIdsRecord = 15;
constexpr int8_t kTopicResource = 2;
constexpr int8_t kBrokerResource = 4;
constexpr size_t kMaxNotes = 10;

// The dynamic broker configs that are defaults of a topic config (Kafka's
// ServerTopicConfigSynonyms: DynamicLogConfig takes only each one's first
// synonym, so log.retention.hours or log.roll.hours set dynamically never
// took effect, and are not taken here either).
const std::vector<std::pair<const char*, const char*>> kTopicConfigSynonyms = {
    {"segment.bytes", "log.segment.bytes"},
    {"segment.ms", "log.roll.ms"},
    {"segment.jitter.ms", "log.roll.jitter.ms"},
    {"segment.index.bytes", "log.index.size.max.bytes"},
    {"flush.messages", "log.flush.interval.messages"},
    {"flush.ms", "log.flush.interval.ms"},
    {"retention.bytes", "log.retention.bytes"},
    {"retention.ms", "log.retention.ms"},
    {"max.message.bytes", "message.max.bytes"},
    {"index.interval.bytes", "log.index.interval.bytes"},
    {"delete.retention.ms", "log.cleaner.delete.retention.ms"},
    {"min.compaction.lag.ms", "log.cleaner.min.compaction.lag.ms"},
    {"max.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms"},
    {"file.delete.delay.ms", "log.segment.delete.delay.ms"},
    {"min.cleanable.dirty.ratio", "log.cleaner.min.cleanable.ratio"},
    {"cleanup.policy", "log.cleanup.policy"},
    {"unclean.leader.election.enable", "unclean.leader.election.enable"},
    {"min.insync.replicas", "min.insync.replicas"},
    {"compression.type", "compression.type"},
    {"compression.gzip.level", "compression.gzip.level"},
    {"compression.lz4.level", "compression.lz4.level"},
    {"compression.zstd.level", "compression.zstd.level"},
    {"preallocate", "log.preallocate"},
    {"message.timestamp.type", "log.message.timestamp.type"},
    {"message.timestamp.difference.max.ms", "log.message.timestamp.difference.max.ms"},
    {"message.timestamp.before.max.ms", "log.message.timestamp.before.max.ms"},
    {"message.timestamp.after.max.ms", "log.message.timestamp.after.max.ms"},
    {"message.downconversion.enable", "log.message.downconversion.enable"},
    {"local.retention.ms", "log.local.retention.ms"},
    {"local.retention.bytes", "log.local.retention.bytes"},
};

// A compact (nullable) string: unsigned varint length + 1, 0 for null.
bool ReadCompactString(ByteReader* r, std::optional<std::string>* out) {
  uint32_t n = 0;
  if (!r->ReadUnsignedVarint(&n)) return false;
  if (n == 0) {
    out->reset();
    return true;
  }
  ByteSpan bytes;
  if (!r->ReadBytes(n - 1, &bytes)) return false;
  *out = std::string(AsStringView(bytes));
  return true;
}

// The metadata as far as topic configs go, built record by record.
class Replay {
 public:
  // One record's value, at `offset` of `file` (named in a note).
  void Apply(ByteSpan value, const std::string& file, int64_t offset) {
    auto where = [&] { return fmt::format("{} offset {}", file, offset); };
    ByteReader r(value);
    uint32_t frame = 0;
    uint32_t api = 0;
    uint32_t version = 0;
    if (!r.ReadUnsignedVarint(&frame) || !r.ReadUnsignedVarint(&api) ||
        !r.ReadUnsignedVarint(&version)) {
      return Skip(where(), "the record header (frame version, api key, version) is cut short");
    }
    if (frame != kFrameVersion) {
      return Skip(where(), fmt::format("frame version {} is not {}", frame, kFrameVersion));
    }
    switch (api) {
      case kTopicRecord: {
        std::optional<std::string> name;
        ByteSpan id;
        if (!ReadCompactString(&r, &name) || !name || !r.ReadBytes(16, &id)) {
          return Skip(where(), fmt::format("TopicRecord v{} does not parse", version));
        }
        topic_names_[std::string(AsStringView(id))] = *name;
        return;
      }
      case kConfigRecord: {
        int8_t type = 0;
        std::optional<std::string> resource;
        std::optional<std::string> name;
        std::optional<std::string> config_value;
        if (!r.ReadInt8(&type) || !ReadCompactString(&r, &resource) || !resource ||
            !ReadCompactString(&r, &name) || !name || !ReadCompactString(&r, &config_value)) {
          return Skip(where(), fmt::format("ConfigRecord v{} does not parse", version));
        }
        std::map<std::string, TopicConfigOverrides>* configs =
            type == kTopicResource    ? &topic_configs_
            : type == kBrokerResource ? &broker_configs_
                                      : nullptr;
        if (configs == nullptr) return;
        if (config_value) {
          (*configs)[*resource][*name] = *config_value;
        } else {
          (*configs)[*resource].erase(*name);
        }
        return;
      }
      case kRemoveTopicRecord: {
        ByteSpan id;
        if (!r.ReadBytes(16, &id)) {
          return Skip(where(), fmt::format("RemoveTopicRecord v{} does not parse", version));
        }
        auto it = topic_names_.find(std::string(AsStringView(id)));
        if (it == topic_names_.end()) return;
        topic_configs_.erase(it->second);  // as Kafka's deleteTopicConfigs
        topic_names_.erase(it);
        return;
      }
      case kProducerIdsRecord: {
        int32_t broker = 0;
        int64_t broker_epoch = 0;
        int64_t next = 0;
        if (!r.ReadInt32(&broker) || !r.ReadInt64(&broker_epoch) || !r.ReadInt64(&next)) {
          return Skip(where(), fmt::format("ProducerIdsRecord v{} does not parse", version));
        }
        next_producer_id_ = std::max(next_producer_id_, next);
        return;
      }
      default:
        return;
    }
  }

  int64_t next_producer_id() const { return next_producer_id_; }

  // The live topics' configs, the broker configs, what was skipped.
  // `node_id`: the broker whose dynamic configs apply over the cluster's
  // defaults (Kafka's DynamicBrokerConfig: the default, then the broker's).
  void Finish(KraftTopicConfigs* out, std::optional<int32_t> node_id) const {
    // The cluster defaults, then this broker's configs, that a topic without
    // its own value ran with, as the topic configs they stand for.
    TopicConfigOverrides inherited;
    std::set<std::pair<std::string, std::string>> used;  // (resource, broker config)
    for (const std::string& resource :
         {std::string(), node_id ? std::to_string(*node_id) : std::string("-")}) {
      auto configs = broker_configs_.find(resource);
      if (configs == broker_configs_.end()) continue;
      for (const auto& [topic_name, broker_name] : kTopicConfigSynonyms) {
        auto it = configs->second.find(broker_name);
        if (it == configs->second.end()) continue;
        inherited[topic_name] = it->second;
        used.insert({resource, broker_name});
        out->cluster_defaults.push_back(fmt::format(
            "{} {}={} (as {})", resource.empty() ? "cluster default" : "broker " + resource,
            broker_name, it->second, topic_name));
      }
    }
    for (const auto& [id, name] : topic_names_) {
      std::array<uint8_t, 16> bytes{};
      std::memcpy(bytes.data(), id.data(), bytes.size());
      out->topic_ids[name] = Uuid(bytes);
      TopicConfigOverrides configs = inherited;
      if (auto it = topic_configs_.find(name); it != topic_configs_.end()) {
        for (const auto& [key, value] : it->second) configs[key] = value;
      }
      if (!configs.empty()) out->topics[name] = std::move(configs);
    }
    for (const auto& [resource, configs] : broker_configs_) {
      for (const auto& [name, value] : configs) {
        if (used.count({resource, name}) > 0) continue;
        out->broker_configs.push_back(fmt::format(
            "{} {}={}", resource.empty() ? "cluster default" : "broker " + resource, name, value));
      }
    }
    out->next_producer_id = next_producer_id_;
    out->skipped_records += skipped_;
    for (const std::string& note : notes_) {
      if (out->notes.size() < kMaxNotes) out->notes.push_back(note);
    }
  }

 private:
  void Skip(const std::string& where, const std::string& why) {
    ++skipped_;
    if (notes_.size() < kMaxNotes)
      notes_.push_back(fmt::format("{}: {}; record skipped", where, why));
  }

  int64_t skipped_ = 0;
  std::vector<std::string> notes_;
  int64_t next_producer_id_ = -1;
  std::map<std::string, std::string> topic_names_;              // topic id (16 bytes) -> name
  std::map<std::string, TopicConfigOverrides> topic_configs_;   // by topic name
  std::map<std::string, TopicConfigOverrides> broker_configs_;  // by broker id, "" for all
};

// Where a file's replay stopped before its end, and whether records can
// have been lost there (offsets missing, or damage with more batches after
// it) rather than a crash having torn the end of the log.
struct Stop {
  std::string where;
  bool lost = false;
};

// Replays the batches of `path` whose records lie at or above `from`.
// *expected is the first offset not yet replayed; a batch reaching `from`
// must start at or below it (the metadata log is never compacted, so
// anything else is a gap). A snapshot must begin with its SnapshotHeader
// and end with its SnapshotFooter control records, as Kafka writes them (an
// emptied or cut one is not the metadata). Returns whether the file read
// whole; else *stop says where and why it stopped (the batches before it
// were replayed).
Result<bool> ReplayFile(FileSystem* fs, const std::string& path, bool snapshot, int64_t from,
                        Replay* replay, int64_t* next_offset, int64_t* expected, Stop* stop) {
  DARUMA_ASSIGN_OR_RETURN(std::unique_ptr<File> file, fs->Open(path, OpenMode::kRead));
  DARUMA_ASSIGN_OR_RETURN(uint64_t size, file->Size());
  FileBatchReaderOptions options;
  options.file_size = size;
  FileBatchReader reader(file.get(), options);
  std::optional<ControlRecordType> first_type;
  std::optional<ControlRecordType> last_type;
  bool first = true;
  while (std::optional<LogEntry> entry = reader.Next()) {
    const std::string at = fmt::format("{} position {}", path, entry->position);
    const bool last_in_file = uint64_t(entry->position) + entry->size() >= size;
    auto damaged = [&](const std::string& why) {
      stop->where = fmt::format("{}: {}", at, why);
      stop->lost = !last_in_file;  // whole batches follow: not a torn end
      return false;
    };
    if (!entry->is_v2()) return damaged("a legacy (magic 0/1) entry");
    if (!entry->has_batch_header()) return damaged("an entry too short for a batch header");
    const RecordBatchView batch = entry->batch();
    // A batch whose records all lie below the snapshot's end is never read
    // (Kafka does not read it either): damage there does not matter.
    const bool needed = snapshot || batch.last_offset() >= from;
    if (Status valid = entry->Validate(); !valid.ok() && needed) return damaged(valid.message());
    if (batch.base_offset() < *next_offset && needed) {
      return damaged(fmt::format("offset {} goes back (expected {} or more)", batch.base_offset(),
                                 *next_offset));
    }
    *next_offset = std::max(*next_offset, batch.next_offset());
    if (!needed) continue;
    last_type = batch.is_control() ? FirstControlRecordType(batch) : std::nullopt;
    if (first) first_type = last_type;
    first = false;
    if (batch.base_offset() > *expected) {
      stop->where =
          fmt::format("{}: offsets {} to {} are missing", at, *expected, batch.base_offset() - 1);
      stop->lost = true;
      return false;
    }
    *expected = batch.next_offset();
    if (batch.is_control()) continue;
    Result<std::vector<Record>> records = batch.DecodeRecords();
    if (!records.ok()) return damaged(records.status().message());
    for (const Record& record : *records) {
      if (record.offset < from || !record.value) continue;
      replay->Apply(AsBytes(*record.value), path, record.offset);
    }
  }
  DARUMA_RETURN_IF_ERROR(reader.io_status());
  if (reader.stop_reason() != StopReason::kEndOfFile) {
    stop->where = reader.stop_message();
    return false;
  }
  if (snapshot && (first_type != ControlRecordType::kSnapshotHeader ||
                   last_type != ControlRecordType::kSnapshotFooter)) {
    stop->where = fmt::format(
        "{}: not a whole snapshot (it must begin with a SnapshotHeader and end with a "
        "SnapshotFooter control record)",
        path);
    return false;
  }
  return true;
}

// The metadata could not be replayed whole, for `why`: no topics, no configs.
KraftTopicConfigs Incomplete(KraftTopicConfigs out, std::string why) {
  out.complete = false;
  out.notes.push_back(why);
  out.incomplete_reason = std::move(why);
  return out;
}

}  // namespace

Result<KraftTopicConfigs> ReadKraftTopicConfigs(FileSystem* fs, const std::string& dir,
                                                std::optional<int32_t> node_id) {
  KraftTopicConfigs out;
  out.dir = dir;
  DARUMA_ASSIGN_OR_RETURN(std::vector<DirEntry> entries, fs->ListDir(dir));
  // Newest first: by end offset, then epoch.
  std::map<std::pair<int64_t, int64_t>, std::string, std::greater<>> snapshots;
  std::map<int64_t, std::string> logs;  // base offset -> path
  for (const DirEntry& e : entries) {
    if (!e.is_regular) continue;
    if (HasSuffix(e.name, kLogFileSuffix)) {
      if (Result<int64_t> base = OffsetFromFileName(e.name); base.ok()) {
        logs.emplace(*base, JoinPath(dir, e.name));
      }
    } else if (HasSuffix(e.name, kSnapshotSuffix) && e.name.size() == 20 + 1 + 10 + 11 &&
               e.name[20] == '-') {
      Result<int64_t> end = OffsetFromFileName(e.name.substr(0, 20) + ".log");
      Result<int64_t> epoch = OffsetFromFileName(e.name.substr(21, 10) + ".log");
      if (end.ok() && epoch.ok()) snapshots.emplace(std::pair{*end, *epoch}, JoinPath(dir, e.name));
    }
  }

  // The newest snapshot that reads whole; a damaged one is passed over for
  // an older one (Kafka would stop on it; an older whole one still says what
  // the metadata was, and the log after it must then cover the rest).
  std::optional<Replay> replay;
  for (const auto& [key, path] : snapshots) {
    Replay attempt;
    int64_t next = 0;
    int64_t expected = std::numeric_limits<int64_t>::max();  // no gaps to find in a snapshot
    Stop stop;
    DARUMA_ASSIGN_OR_RETURN(
        bool whole, ReplayFile(fs, path, /*snapshot=*/true, 0, &attempt, &next, &expected, &stop));
    if (!whole) {
      out.notes.push_back(fmt::format("snapshot {} not used: {}", path, stop.where));
      out.damaged_snapshots.push_back({path, stop.where});
      continue;
    }
    out.snapshot = path;
    out.end_offset = key.first;
    replay = std::move(attempt);
    break;
  }
  if (!replay) {
    if (logs.empty()) {
      // A KRaft broker's metadata is never empty (its controller wrote the
      // features and registrations first): the files are gone.
      return Incomplete(std::move(out), fmt::format("{} holds neither a snapshot nor a log: the "
                                                    "metadata is missing",
                                                    dir));
    }
    if (logs.begin()->first != 0) {
      return Incomplete(std::move(out),
                        fmt::format("no readable snapshot, and the log starts at offset {} (its "
                                    "older segments were replaced by a snapshot): the metadata "
                                    "cannot be replayed",
                                    logs.begin()->first));
    }
    replay.emplace();
  }
  if (logs.empty()) {
    // Kafka always keeps an active segment: the records after the snapshot
    // are somewhere else, and configs changed after it are not seen.
    out.notes.push_back(
        fmt::format("no .log segment beside the snapshot: changes after offset {} are not known",
                    out.end_offset));
  }

  const int64_t from = out.end_offset;
  int64_t next = 0;
  int64_t expected = from;
  for (auto it = logs.begin(); it != logs.end(); ++it) {
    auto following = std::next(it);
    if (following != logs.end() && following->first <= from) continue;  // all below `from`
    Stop stop;
    DARUMA_ASSIGN_OR_RETURN(bool whole, ReplayFile(fs, it->second, /*snapshot=*/false, from,
                                                   &*replay, &next, &expected, &stop));
    if (whole) continue;
    // A torn or damaged end of the last segment is the tail of a crash,
    // which Kafka truncates; anywhere else the records after it are lost.
    if (stop.lost || following != logs.end()) {
      // What was replayed still bounds the ids Kafka handed out from below.
      out.next_producer_id = replay->next_producer_id();
      return Incomplete(std::move(out), fmt::format("replay stopped at {}: the metadata cannot "
                                                    "be replayed",
                                                    stop.where));
    }
    out.notes.push_back(
        fmt::format("replay stopped at {} (a crashed tail, which Kafka truncates)", stop.where));
  }
  out.end_offset = std::max(from, expected);
  replay->Finish(&out, node_id);
  return out;
}

}  // namespace daruma
