#include "broker/request_handler.h"

#include <utility>

#include "broker/api_handlers.h"
#include "broker/protocol/api_keys.h"
#include "broker/protocol/request_header.h"

namespace daruma::broker {

RequestHandler::RequestHandler(BrokerContext ctx, asio::any_io_executor executor)
    : ctx_(std::move(ctx)),
      strand_(asio::make_strand(executor)),
      topics_(ctx_.log_manager, ctx_.config.log),
      purgatory_(strand_) {
  init_status_ = topics_.Load();
}

RequestHandler::~RequestHandler() = default;

void RequestHandler::Handle(std::vector<uint8_t> frame, Respond respond) {
  asio::dispatch(strand_, [this, frame = std::move(frame), respond = std::move(respond)]() {
    HandleOnStrand(frame, respond);
  });
}

void RequestHandler::Shutdown() {
  asio::dispatch(strand_, [this] {
    shut_down_ = true;
    purgatory_.CompleteAll();
  });
}

void RequestHandler::HandleOnStrand(const std::vector<uint8_t>& frame, Respond respond) {
  if (shut_down_) return respond(std::nullopt, true);
  ProtocolReader reader(frame);
  Result<RequestHeader> parsed = DecodeRequestHeader(reader);
  if (!parsed.ok()) return respond(std::nullopt, true);
  const RequestHeader& header = *parsed;
  if (!IsSupportedVersion(header.api_key, header.api_version)) {
    const ApiVersionRange* range = FindAdvertisedApi(header.api_key);
    // Only a too-new ApiVersions gets an answer, so the client can pick (§3.1).
    if (header.api_key == ApiKey::kApiVersions && range != nullptr &&
        header.api_version > range->max) {
      return HandleUnsupportedApiVersions(header, respond);
    }
    return respond(std::nullopt, true);
  }
  HandlerEnv env{ctx_, topics_, purgatory_};
  switch (header.api_key) {
    case ApiKey::kApiVersions:
      return HandleApiVersions(env, header, reader, respond);
    case ApiKey::kMetadata:
      return HandleMetadata(env, header, reader, respond);
    case ApiKey::kProduce:
      return HandleProduce(env, header, reader, respond);
    case ApiKey::kFetch:
      return HandleFetch(env, header, reader, respond);
    case ApiKey::kListOffsets:
      return HandleListOffsets(env, header, reader, respond);
    case ApiKey::kCreateTopics:
      return HandleCreateTopics(env, header, reader, respond);
    case ApiKey::kDeleteTopics:
      return HandleDeleteTopics(env, header, reader, respond);
    case ApiKey::kFindCoordinator:
      return HandleFindCoordinator(env, header, reader, respond);
    case ApiKey::kDescribeConfigs:
      return HandleDescribeConfigs(env, header, reader, respond);
    default:
      // Advertised but not implemented here: a table/handler mismatch.
      return respond(std::nullopt, true);
  }
}

ErrorCode ErrorCodeForStorageStatus(const Status& status) {
  switch (status.code()) {
    case StatusCode::kOk:
      return ErrorCode::kNone;
    case StatusCode::kIoError:
      return ErrorCode::kKafkaStorageError;
    case StatusCode::kOutOfRange:
      return ErrorCode::kOffsetOutOfRange;
    case StatusCode::kCorruption:
      return ErrorCode::kCorruptMessage;
    case StatusCode::kTooLarge:
      return ErrorCode::kMessageTooLarge;
    case StatusCode::kInvalidRecord:
      return ErrorCode::kInvalidRecord;
    case StatusCode::kInvalidTxnState: {
      // ProducerAppendInfo names the Kafka error first in its message.
      const std::string& m = status.message();
      if (m.find("OUT_OF_ORDER_SEQUENCE_NUMBER") != std::string::npos) {
        return ErrorCode::kOutOfOrderSequenceNumber;
      }
      if (m.find("INVALID_PRODUCER_EPOCH") != std::string::npos) {
        return ErrorCode::kInvalidProducerEpoch;
      }
      if (m.find("TRANSACTION_COORDINATOR_FENCED") != std::string::npos) {
        return ErrorCode::kTransactionCoordinatorFenced;
      }
      return ErrorCode::kInvalidTxnState;
    }
    default:
      return ErrorCode::kUnknownServerError;
  }
}

}  // namespace daruma::broker
