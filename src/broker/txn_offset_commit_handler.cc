// TxnOffsetCommit: a transactional producer's consumed offsets (KIP-98,
// KIP-447). They are verified against the producer's transaction, which must
// already hold the group's `__consumer_offsets` partition (AddOffsetsToTxn),
// then written by the group coordinator as part of that transaction: they
// become visible only with its COMMIT marker.
#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {

void HandleTxnOffsetCommit(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                           const Respond& respond) {
  Result<TxnOffsetCommitRequest> request = DecodeTxnOffsetCommitRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  TxnOffsetCommitResponse response;
  TxnOffsetCommitArgs args;
  args.transactional_id = request->transactional_id;
  args.group_id = request->group_id;
  args.producer_id = request->producer_id;
  args.producer_epoch = request->producer_epoch;
  args.generation_id = request->generation_id;
  args.member_id = request->member_id;
  args.group_instance_id = request->group_instance_id;
  const bool served = env.groups != nullptr && env.txns != nullptr;
  // Where each partition the coordinator sees answers: (topic, partition)
  // indexes in the response.
  std::vector<std::pair<size_t, size_t>> sent;
  for (const auto& topic : request->topics) {
    TxnOffsetCommitResponse::Topic t;
    t.name = topic.name;
    for (const auto& p : topic.partitions) {
      TxnOffsetCommitResponse::Partition out;
      out.partition_index = p.partition_index;
      if (!served) {
        out.error_code = ErrorCode::kCoordinatorNotAvailable;
      } else if (env.topics.GetLog(TopicPartition{topic.name, p.partition_index}) == nullptr) {
        out.error_code = ErrorCode::kUnknownTopicOrPartition;
      } else {
        OffsetCommitArgs::Partition c;
        c.topic = topic.name;
        c.partition = p.partition_index;
        c.offset = p.committed_offset;
        c.leader_epoch = p.committed_leader_epoch;
        c.metadata = p.committed_metadata;
        args.partitions.push_back(std::move(c));
        sent.emplace_back(response.topics.size(), t.partitions.size());
      }
      t.partitions.push_back(out);
    }
    response.topics.push_back(std::move(t));
  }
  if (!args.partitions.empty()) {
    std::vector<ErrorCode> errors;
    const TopicPartition offsets{std::string(kConsumerOffsetsTopic),
                                 env.groups->PartitionFor(request->group_id)};
    const ErrorCode verified = env.txns->WithOngoingTransaction(
        args.transactional_id, args.producer_id, args.producer_epoch, offsets,
        [&] { errors = env.groups->CommitTransactionalOffsets(args); });
    if (verified != ErrorCode::kNone) errors.assign(sent.size(), verified);
    for (size_t i = 0; i < sent.size(); ++i) {
      response.topics[sent[i].first].partitions[sent[i].second].error_code = errors[i];
    }
  }
  respond(EncodeResponseFrame(env, header, response, EncodeTxnOffsetCommitResponse), false);
}

}  // namespace daruma::broker
