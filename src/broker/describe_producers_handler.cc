// DescribeProducers (KIP-664, Kafka's UnifiedLog.activeProducers): each
// requested partition's active producers from its producer state: id, epoch,
// last sequence, last timestamp, coordinator epoch and the first offset of
// its open transaction (-1 when none). Unknown topic or partition:
// UNKNOWN_TOPIC_OR_PARTITION.
#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {

void HandleDescribeProducers(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                             const Respond& respond) {
  Result<DescribeProducersRequest> request =
      DecodeDescribeProducersRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  DescribeProducersResponse response;
  for (const auto& t : request->topics) {
    DescribeProducersResponse::Topic out;
    out.name = t.name;
    for (int32_t index : t.partition_indexes) {
      DescribeProducersResponse::Partition p;
      p.partition_index = index;
      Log* log = env.topics.GetLog({t.name, index});
      if (log == nullptr) {
        p.error_code = ErrorCode::kUnknownTopicOrPartition;
        p.error_message = "This server does not host this topic-partition.";
        out.partitions.push_back(std::move(p));
        continue;
      }
      for (const ProducerSnapshotEntry& e : log->ActiveProducerEntries()) {
        p.active_producers.push_back({.producer_id = e.producer_id,
                                      .producer_epoch = e.epoch,
                                      .last_sequence = e.last_sequence,
                                      .last_timestamp = e.timestamp,
                                      .coordinator_epoch = e.coordinator_epoch,
                                      .current_txn_start_offset = e.current_txn_first_offset});
      }
      out.partitions.push_back(std::move(p));
    }
    response.topics.push_back(std::move(out));
  }
  respond(EncodeResponseFrame(env, header, response, EncodeDescribeProducersResponse), false);
}

}  // namespace daruma::broker
