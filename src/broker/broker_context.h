// BrokerContext: everything the request handlers need from the process that
// hosts them (Kafka's KafkaApis constructor arguments, reduced to one node).
//
// Contract: `log_manager` and `clock` are owned by the caller and outlive every
// RequestHandler built from this context. The broker settings below are the
// Kafka properties the handlers honour; ResolveBrokerSettings fills them from
// ServerConfig::other with Kafka's names and defaults, so SERVER only sets the
// network identity (host/port) and the pointers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "broker/event_log.h"
#include "common/clock.h"
#include "common/status.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/transaction_coordinator.h"
#include "recovery/log_manager.h"
#include "recovery/server_config.h"

namespace daruma::broker {

class Scrubber;

// A fixed 22-character URL-safe base64 id: clients only compare it.
inline constexpr char kDefaultClusterId[] = "ZGFydW1hLWRhcnVtYS0wMQ";

struct BrokerContext {
  LogManager* log_manager = nullptr;
  ServerConfig config;             // config.log holds the broker-level topic defaults
  int32_t node_id = 0;             // node.id, else broker.id
  std::string host = "127.0.0.1";  // advertised to clients in Metadata
  int32_t port = 9092;
  Clock* clock = Clock::System();
  std::string cluster_id = kDefaultClusterId;
  std::optional<std::string> rack;  // broker.rack; DescribeCluster reports it

  bool auto_create_topics_enable = true;  // auto.create.topics.enable
  int32_t num_partitions = 1;             // num.partitions
  bool delete_topic_enable = true;        // delete.topic.enable
  int32_t fetch_max_bytes = 57671680;     // fetch.max.bytes (caps a Fetch's MaxBytes)
  // Where Fetch opens segment files to send them with sendfile (the log
  // manager's FileSystem); null = every Fetch copies through Log::Read.
  FileSystem* zero_copy_fs = nullptr;
  // The group coordinator's group.* / offsets.* settings.
  GroupCoordinatorConfig groups;
  int32_t offsets_topic_segment_bytes = 104857600;  // offsets.topic.segment.bytes
  // The transaction coordinator's transaction.* / transactional.id.* settings.
  TransactionCoordinatorConfig transactions;
  int32_t transaction_state_segment_bytes = 104857600;  // transaction.state.log.segment.bytes
  // Error responses and refused requests are logged here (request_log.h);
  // null = not logged. Owned by the caller, thread-safe.
  EventLog* log = nullptr;
  // The background scrubber (scrubber.h): Fetch does not serve what it found
  // damaged. Null = no scrub findings are consulted. Owned by the caller.
  Scrubber* scrubber = nullptr;
};

// Reads node.id/broker.id, broker.rack, auto.create.topics.enable,
// num.partitions, delete.topic.enable, fetch.max.bytes and the group
// coordinator's settings (group.min.session.timeout.ms,
// group.max.session.timeout.ms, group.initial.rebalance.delay.ms,
// group.max.size, offsets.topic.num.partitions, offsets.topic.segment.bytes,
// offset.metadata.max.bytes, offsets.retention.minutes,
// offsets.retention.check.interval.ms) and the transaction coordinator's
// (transaction.max.timeout.ms, transaction.state.log.num.partitions,
// transaction.state.log.segment.bytes,
// transaction.abort.timed.out.transaction.cleanup.interval.ms,
// transactional.id.expiration.ms,
// transaction.remove.expired.transaction.cleanup.interval.ms) from `ctx->config.other` (absent keys
// keep the defaults above). kInvalidArgument naming the key and the value when
// one does not parse or is out of Kafka's range.
Status ResolveBrokerSettings(BrokerContext* ctx);

}  // namespace daruma::broker
