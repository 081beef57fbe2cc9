// The topic configs a KRaft broker's metadata log holds, read so that a log
// dir Kafka wrote keeps them under Daruma (TopicConfigStore imports them once,
// at the first `daruma serve`).
//
// Kafka keeps topic configs only in `__cluster_metadata-0`, never beside the
// partitions. Without them a migrated `_schemas` or Connect topic runs as
// `cleanup.policy=delete` and time retention deletes its records, and a topic
// kept for ever (`retention.ms=-1`) loses everything older than 7 days.
//
// The image is Kafka's replay (MetadataDelta) reduced to what topic configs
// need: the newest snapshot (`<end offset>-<epoch>.checkpoint`) that reads
// whole, then every `.log` batch from its end offset on, in offset order,
// up to the first batch that fails its CRC or ends short (a crashed tail
// Kafka would truncate). Of the records (value: frame version, api key and
// version as unsigned varints, then the record in Kafka's flexible encoding)
// three matter:
//   TopicRecord (2)        name, id: the topic exists (its id is kept);
//   ConfigRecord (4)       resource type (2 = topic), resource name, config
//                          name, value (null: the config was deleted);
//   RemoveTopicRecord (9)  id: the topic and all its configs are gone;
//   ProducerIdsRecord (15) the next producer id block the controller hands
//                          out (Daruma's producer ids start above it).
// Broker configs (resource type 4) that are defaults of a topic config, the
// cluster's and then the writing broker's, become the topic configs they
// stand for; the others are listed, not imported (Daruma's broker configs
// come from its own properties). Every other record,
// and control batches, are skipped. Transactions in the metadata log (a
// ZooKeeper migration's, Kafka 3.6+) are not told apart: their records are
// applied as they come.
//
// Never writes. The result is not `complete` (and holds no topic) when the
// metadata cannot be replayed whole: no readable snapshot and a log that
// does not start at offset 0 (Kafka deleted the segments a snapshot
// replaced), offsets missing after the snapshot, or damage before the last
// segment. Damage in the last segment is a crashed tail: the replay stops
// there, as Kafka truncates it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"
#include "log/topic_config_overrides.h"
#include "log/uuid.h"

namespace daruma {

struct KraftTopicConfigs {
  std::string dir;       // the `__cluster_metadata-0` dir read
  std::string snapshot;  // the snapshot the replay started from; "" for none
  // Offsets below this were replayed (the image is the metadata at end_offset - 1).
  int64_t end_offset = 0;
  // False when the metadata could not be replayed whole (see `notes`): then
  // `topics` is empty.
  bool complete = true;
  // Every live topic that ran with configs other than its broker's static
  // ones: its own, over the cluster defaults set in the metadata (a
  // `kafka-configs --entity-default` change of log.retention.ms, say,
  // becomes retention.ms), as Kafka resolved them.
  std::map<std::string, TopicConfigOverrides> topics;
  // Every live topic's id (TopicRecord), by name: what a partition dir of it
  // whose partition.metadata Kafka never flushed (it writes the file after
  // creating the log, asynchronously) must name for Kafka to serve it.
  std::map<std::string, Uuid> topic_ids;
  // The cluster defaults and this broker's configs `topics` carries:
  // "cluster default log.retention.ms=1 (as retention.ms)".
  std::vector<std::string> cluster_defaults;
  // The other live broker and cluster configs ("broker 1 log.retention.ms=1",
  // "cluster default num.io.threads=8"): Daruma does not import them (its
  // broker configs come from its own properties), so the caller names them.
  std::vector<std::string> broker_configs;
  // The controller's next producer id block (ProducerIdsRecord, api key 15):
  // every id Kafka handed out lies below it; -1 when no record says.
  int64_t next_producer_id = -1;
  int64_t skipped_records = 0;
  // Snapshots newer than the one the replay started from (none: newer than
  // every one) that do not read whole, newest first, and why; the first of
  // them is the one a Kafka broker would load, and stop at its damage.
  struct DamagedSnapshot {
    std::string path;
    std::string why;
  };
  std::vector<DamagedSnapshot> damaged_snapshots;
  // When not `complete`: why, naming file and offset (also in `notes`).
  std::string incomplete_reason;
  // What was skipped or where the replay stopped, naming file and offset.
  std::vector<std::string> notes;
};

// `dir` is a `__cluster_metadata-0` directory. An I/O error on a file the
// replay needs is returned naming it.
// `node_id`: the broker that wrote the dir (meta.properties), whose own
// dynamic configs apply over the cluster defaults.
Result<KraftTopicConfigs> ReadKraftTopicConfigs(FileSystem* fs, const std::string& dir,
                                                std::optional<int32_t> node_id = std::nullopt);

}  // namespace daruma
