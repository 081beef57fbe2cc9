// daruma-topic-configs.json: the topic config overrides of a broker, kept at
// the root of every log dir (Kafka keeps them in its metadata log, which
// Daruma reads once, to import them: kraft_topic_configs.h). Kafka's
// LogManager loads only sub-directories of a log dir, so this file does not
// stop Kafka from opening the dir.
//
// Format (UTF-8 JSON, one object):
//   {"version": 1, "generation": <int64 >= 0>,
//    "topics": {"<topic>": {"<config name>": "<value>", ...}, ...},
//    "creating": {"<topic>": {"id": "<topic id>", "partitions": <n>}, ...},
//    "deleted": {"<topic id>": "<topic>", ...},
//    "kafkaImport": {"metadataLog": "<dir>", "endOffset": <n>,
//                    "pending": <bool>, "nextProducerId": <n>,
//                    "topicIds": {"<topic>": "<topic id>", ...}}}
// "creating" and "deleted" are what Kafka's metadata log makes atomic: a
// topic whose creation was recorded but whose partition dirs may not all
// exist yet (the broker completes it at start-up), and deleted topics whose
// partition dirs may still be found (in a dir that was offline, or not yet
// renamed when the broker stopped): such a dir is deleted, never served.
// Both are absent when empty, and older readers ignore them. "kafkaImport"
// records that the topic configs of a Kafka broker's metadata log were
// imported (kraft_topic_configs.h), so they are never imported again over
// what was changed since; its "topicIds" (absent when empty) are the ids the
// metadata log gives its topics, for a partition dir a crash left without
// partition.metadata at any later start (a topic's entry goes with its
// deletion).
// Values are strings exactly as the client gave them (topic_config_overrides.h
// parses them). `generation` grows by one on every write; with several log
// dirs the reader trusts the highest generation it can parse (a dir that was
// offline during a write keeps an older one).
//
// Written with FileSystem::WriteFileAtomically (temp file, fsync, rename, dir
// fsync): a crash leaves the old or the new file, never a mix.
//
// Reading is lenient per entry and strict per file: a file that is not JSON,
// or whose `version`/`generation`/`topics` is missing or mistyped, is an
// error naming the file and the field (kCorruption); a topic whose entry is
// not an object, or a config whose value is not a string, is dropped with a
// warning naming the file, the topic and the field.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"
#include "log/topic_config_overrides.h"
#include "log/topic_intents.h"
#include "log/uuid.h"

namespace daruma {

inline constexpr char kTopicConfigsFileName[] = "daruma-topic-configs.json";

// Where imported Kafka topic configs came from: the metadata log dir and
// the offset its replay ended at; `pending` while the import could not be
// done whole (a start tries again); the controller's next producer id
// (-1: unknown); the topic ids of the metadata (KraftTopicConfigs::topic_ids,
// when the replay was whole), less those of topics deleted since.
struct KafkaConfigImportMark {
  std::string metadata_log;
  int64_t end_offset = 0;
  bool pending = false;
  int64_t next_producer_id = -1;
  std::map<std::string, Uuid> topic_ids = {};
};

struct TopicConfigs {
  int64_t generation = 0;
  std::map<std::string, TopicConfigOverrides> topics;
  std::map<std::string, PendingTopicCreation> creating;  // by topic name
  std::map<Uuid, std::string> deleted;                   // topic id -> name
  std::optional<KafkaConfigImportMark> kafka_import;
};

// nullopt when `log_dir` has no such file. Dropped entries are appended to
// *warnings.
Result<std::optional<TopicConfigs>> ReadTopicConfigsFile(FileSystem* fs, const std::string& log_dir,
                                                         std::vector<std::string>* warnings);

Status WriteTopicConfigsFile(FileSystem* fs, const std::string& log_dir,
                             const TopicConfigs& configs);

// The file's bytes (also for tests).
std::string EncodeTopicConfigs(const TopicConfigs& configs);

}  // namespace daruma
