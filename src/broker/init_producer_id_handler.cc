// InitProducerId (KIP-98, KIP-360; Kafka's KafkaApis.handleInitProducerIdRequest
// and TransactionCoordinator.handleInitProducerId).
//
// Without a transactional id the producer is idempotent only: Kafka always
// answers with a new producer id and epoch 0, whatever id and epoch the
// request names (a v3+ producer that lost its sequence state asks again and
// simply starts over under a new id). The ids come from ProducerIdManager,
// durable in blocks, so none is handed out twice across crashes, and none
// that the logs, `__transaction_state` or a Kafka cluster's metadata already
// name (so such a request waits for the start's read of `__transaction_state`).
//
// A transactional id goes to the transaction coordinator
// (coordinator/transaction_coordinator.h): a new id gets a producer id at
// epoch 0, a known one its epoch bumped (fencing the previous instance and
// aborting its open transaction first).
#include "broker/api_handlers.h"
#include "protocol/messages.h"
#include "record/record_batch.h"

namespace daruma::broker {

void HandleInitProducerId(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                          const Respond& respond) {
  Result<InitProducerIdRequest> request = DecodeInitProducerIdRequest(body, header.api_version);
  if (!request.ok()) return CloseMalformed(env, header, request.status(), respond);
  InitProducerIdResponse response;
  response.producer_id = kNoProducerId;
  response.producer_epoch = kNoProducerEpoch;
  // Kafka: an id without an epoch (or the reverse) is INVALID_REQUEST.
  const bool has_id = request->producer_id != kNoProducerId;
  const bool has_epoch = request->producer_epoch != kNoProducerEpoch;
  if (has_id != has_epoch) {
    response.error_code = ErrorCode::kInvalidRequest;
  } else if (request->transactional_id && request->transactional_id->empty()) {
    response.error_code = ErrorCode::kInvalidRequest;
  } else if (request->transactional_id) {
    if (env.txns == nullptr) {
      response.error_code = ErrorCode::kCoordinatorNotAvailable;
    } else {
      std::optional<std::pair<int64_t, int16_t>> expected;
      if (has_id) expected.emplace(request->producer_id, request->producer_epoch);
      const InitProducerIdResult r = env.txns->InitProducerId(
          *request->transactional_id, request->transaction_timeout_ms, expected);
      response.error_code = r.error;
      // PRODUCER_FENCED exists from v4 (Kafka 2.7); older clients are told
      // INVALID_PRODUCER_EPOCH, as Kafka does.
      if (r.error == ErrorCode::kProducerFenced && header.api_version < 4) {
        response.error_code = ErrorCode::kInvalidProducerEpoch;
      }
      if (r.error == ErrorCode::kNone) {
        response.producer_id = r.producer_id;
        response.producer_epoch = r.producer_epoch;
      }
    }
  } else if (env.producer_ids == nullptr) {
    response.error_code = ErrorCode::kKafkaStorageError;
  } else if (!env.producer_ids->floor_known()) {
    // Until `__transaction_state` has been read at start-up, the ids it names
    // (from a Kafka cluster's controller) are not yet excluded from new ones;
    // Kafka's clients retry this answer.
    response.error_code = ErrorCode::kCoordinatorLoadInProgress;
  } else {
    Result<int64_t> id = env.producer_ids->Generate();
    if (id.ok()) {
      response.producer_id = *id;
      response.producer_epoch = 0;
    } else {
      response.error_code = ErrorCodeForStorageStatus(id.status());
      if (env.ctx.log != nullptr) {
        env.ctx.log->Write(LogLevel::kError, "producer_id_block_failed",
                           LogFields().Add("reason", id.status().ToString()));
      }
    }
  }
  respond(EncodeResponseFrame(env, header, response, EncodeInitProducerIdResponse), false);
}

}  // namespace daruma::broker
