// DescribeTransactions and ListTransactions (KIP-664): what the transaction
// coordinator knows, for `kafka-transactions.sh` and admin clients.
#include "broker/api_handlers.h"
#include "protocol/messages.h"

namespace daruma::broker {

void HandleDescribeTransactions(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                                const Respond& respond) {
  Result<DescribeTransactionsRequest> request =
      DecodeDescribeTransactionsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  DescribeTransactionsResponse response;
  for (const std::string& id : request->transactional_ids) {
    DescribeTransactionsResponse::TransactionState s;
    s.transactional_id = id;
    if (env.txns == nullptr) {
      s.error_code = ErrorCode::kCoordinatorNotAvailable;
      response.transaction_states.push_back(std::move(s));
      continue;
    }
    TransactionDescription d = env.txns->Describe(id);
    s.error_code = d.error;
    s.transaction_state = d.state;
    s.transaction_timeout_ms = d.timeout_ms;
    s.transaction_start_time_ms = d.start_timestamp_ms;
    s.producer_id = d.producer_id;
    s.producer_epoch = d.producer_epoch;
    for (const TopicPartition& tp : d.partitions) {
      if (s.topics.empty() || s.topics.back().topic != tp.topic) {
        s.topics.emplace_back();
        s.topics.back().topic = tp.topic;
      }
      s.topics.back().partitions.push_back(tp.partition);
    }
    response.transaction_states.push_back(std::move(s));
  }
  respond(EncodeResponseFrame(env, header, response, EncodeDescribeTransactionsResponse), false);
}

void HandleListTransactions(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                            const Respond& respond) {
  Result<ListTransactionsRequest> request = DecodeListTransactionsRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  ListTransactionsResponse response;
  if (env.txns == nullptr) {
    response.error_code = ErrorCode::kCoordinatorNotAvailable;
  } else {
    const std::set<int64_t> producers(request->producer_id_filters.begin(),
                                      request->producer_id_filters.end());
    const std::set<std::string> states(request->state_filters.begin(),
                                       request->state_filters.end());
    TransactionListResult listed = env.txns->List(producers, states, request->duration_filter);
    response.error_code = listed.error;
    response.unknown_state_filters = std::move(listed.unknown_state_filters);
    for (const TransactionListing& t : listed.transactions) {
      ListTransactionsResponse::TransactionState s;
      s.transactional_id = t.transactional_id;
      s.producer_id = t.producer_id;
      s.transaction_state = t.state;
      response.transaction_states.push_back(std::move(s));
    }
  }
  respond(EncodeResponseFrame(env, header, response, EncodeListTransactionsResponse), false);
}

}  // namespace daruma::broker
