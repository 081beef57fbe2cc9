// BrokerIdentity: the node id and cluster id `daruma serve` answers with, and
// the `meta.properties` (spec §9.8, log/meta_properties.h) that records them
// at the root of every log dir.
//
// Two steps around LogManager::Startup:
//
//   ResolveBrokerIdentity (before, reads only): the configured id is node.id,
//   else broker.id (Kafka's precedence). Every existing, parsable
//   meta.properties is read; a stored node id that differs from a configured
//   one is fatal (Kafka: "Stored node id X doesn't match previous node id Y"),
//   nothing has been touched yet. With no id configured the stored one is
//   adopted, else 0. The cluster id is the first stored cluster.id, else
//   kDefaultClusterId when some dir has a meta.properties without one (a v0
//   file, kept stable across restarts), else a fresh random Uuid (what Kafka's
//   storage format tool does). Unparsable files and disagreement between dirs
//   are left to LogManager::Startup, which refuses them.
//
//   WriteMissingMetaProperties (after, the dirs exist and are locked): every
//   given dir without meta.properties gets one, written atomically (temp file,
//   fsync, rename), in the version the broker's other dirs have, so that the
//   Kafka broker that wrote them still starts on all of them:
//     - some readable file is version 0 (a ZooKeeper-mode broker's, which
//       refuses any other version: KafkaServer verifies REQUIRE_V0):
//       version=0, broker.id and the stored cluster.id if a file has one,
//       what KafkaServer writes into an empty dir. No directory.id: a
//       ZooKeeper broker that migrates to KRaft adds one itself, and so does
//       a KRaft broker, which also accepts a v0 file with both ids;
//     - otherwise, including when no dir has meta.properties yet: version=1,
//       node.id, cluster.id and a fresh directory.id, the layout of Kafka
//       3.7+ in KRaft mode. With no file at all nothing shows a ZooKeeper
//       broker ever ran on the dirs (it writes every dir's file at its
//       first start), and a v0 file would have to carry Daruma's invented
//       cluster.id, which such a broker refuses anyway (it takes its id
//       from ZooKeeper), or none, which a KRaft broker refuses.
//   Existing files are never rewritten.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/file_system.h"
#include "common/status.h"
#include "log/meta_properties.h"
#include "recovery/server_config.h"

namespace daruma::broker {

struct BrokerIdentity {
  int32_t node_id = 0;
  std::string cluster_id;
};

// kInvalidArgument naming the dir, the stored and the configured id on a
// mismatch, or naming the key for an unparsable node.id / broker.id.
Result<BrokerIdentity> ResolveBrokerIdentity(const ServerConfig& config,
                                             FileSystem* fs = FileSystem::Default());

struct WrittenMetaProperties {
  std::string path;
  MetaProperties meta;
};

// The files written (in `log_dirs` order) or the first write error.
Result<std::vector<WrittenMetaProperties>> WriteMissingMetaProperties(
    const std::vector<std::string>& log_dirs, const BrokerIdentity& identity,
    FileSystem* fs = FileSystem::Default());

}  // namespace daruma::broker
