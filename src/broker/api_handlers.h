// The per-API handlers behind RequestHandler, one .cc file each
// (<api>_handler.cc), the table that switches them on, and the helpers they
// share.
//
// The handler table (ApiHandlerTable, api_table.cc) is the one place an API
// is switched on: RequestHandler dispatches through it, and ApiVersions
// advertises exactly its rows, each with the version range its codec reads
// (protocol/api_keys.h). A codec without a row is neither advertised nor
// reachable; a row without a codec range is a bug (HandlerTable in
// tests/broker/handler_log_test.cc checks).
//
// Contract: RequestHandler has parsed the header, checked the version is
// advertised and positioned `body` at the first body byte. A handler decodes
// the body (a decode error: CloseMalformed, as Kafka closes on an
// unparseable request), does the work and calls `respond` exactly once, now
// or later (Fetch), with the full response frame (EncodeResponseFrame, which
// also logs the response's errors). Handlers run on the request threads,
// several at once (one per connection at most): everything they share goes
// through HandlerEnv, whose members are thread-safe.
#pragma once

#include <mutex>
#include <optional>
#include <span>
#include <vector>

#include "broker/broker_context.h"
#include "broker/delayed_fetch.h"
#include "broker/fetch_slice_reader.h"
#include "broker/frame_handler.h"
#include "broker/request_log.h"
#include "broker/response_errors.h"
#include "broker/topic_registry.h"
#include "common/status.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/producer_append_errors.h"
#include "coordinator/producer_id_manager.h"
#include "coordinator/transaction_coordinator.h"
#include "log/producer_append_info.h"
#include "protocol/error_codes.h"
#include "protocol/protocol_reader.h"
#include "protocol/protocol_writer.h"
#include "protocol/request_header.h"

namespace daruma::broker {

struct HandlerEnv {
  const BrokerContext& ctx;  // read-only
  TopicRegistry& topics;
  DelayedFetchPurgatory& purgatory;
  // Held only while reading a log end and raising the high watermark to it
  // (RequestHandler::hw_mu_), so the high watermark never moves back.
  std::mutex& hw_mu;
  // Fetch's zero-copy reads (file ranges instead of bytes).
  FetchSliceReader& slices;
  // The request frame, writable (Produce appends its batches in place). Valid
  // only during the handler's call, not in a parked fetch.
  std::span<uint8_t> frame;
  // The connection the request came from (a parked fetch is completed early
  // when it goes away); may be null in tests.
  ClientScopePtr client;
  // InitProducerId's ids; null when no log dir could keep them (the API then
  // answers KAFKA_STORAGE_ERROR).
  ProducerIdManager* producer_ids = nullptr;
  // The group coordinator; null in tests that serve no groups (the group
  // APIs then answer COORDINATOR_NOT_AVAILABLE).
  GroupCoordinator* groups = nullptr;
  // The transaction coordinator; null in tests that serve no transactions
  // (the transaction APIs then answer COORDINATOR_NOT_AVAILABLE and no
  // transactional batch is accepted).
  TransactionCoordinator* txns = nullptr;
};

// EncodeResponseFrame for an answer given after the handler returned (a
// JoinGroup or SyncGroup completed by another member or by a deadline):
// needs only the context, which outlives every request.
template <typename Response, typename Encode>
ResponseFrame EncodeLaterResponseFrame(const BrokerContext& ctx, const RequestHeader& header,
                                       const Response& response, Encode encode) {
  LogErrorResponse(ctx.log, header, ErrorsOf(response));
  ProtocolWriter writer;
  EncodeResponseHeader(header.correlation_id, header.api_key, header.api_version, writer);
  encode(response, header.api_version, writer);
  return writer.ReleaseFrame();
}

// The response frame: header for (key, version) of `header`, then the body
// (with the file ranges a Fetch splices in). A response with an error code
// anywhere is logged (request_log.h).
template <typename Response, typename Encode>
ResponseFrame EncodeResponseFrame(const HandlerEnv& env, const RequestHeader& header,
                                  const Response& response, Encode encode) {
  LogErrorResponse(env.ctx.log, header, ErrorsOf(response));
  ProtocolWriter writer;
  EncodeResponseHeader(header.correlation_id, header.api_key, header.api_version, writer);
  encode(response, header.api_version, writer);
  return writer.ReleaseFrame();
}

// New partitions one CreateTopics or CreatePartitions request may make, all
// its topics together. Kafka's controller refuses an operation that would
// write more than 10,000 metadata records (MAX_RECORDS_PER_USER_OP, one per
// partition) with POLICY_VIOLATION and this message. Uncapped, one request
// for 2^31 - 1 partitions held the admin lock while it filled the disk
// with directories, and its pending creation resumed at every start.
inline constexpr int64_t kMaxNewPartitionsPerRequest = 10000;
inline constexpr const char* kExcessiveBatchMessage =
    "Unable to perform excessively large batch operation.";

// A body that does not decode: logged, and the connection closed without an
// answer (Kafka's behaviour for a request it cannot parse).
void CloseMalformed(const HandlerEnv& env, const RequestHeader& header, const Status& why,
                    const Respond& respond);

using ApiHandler = void (*)(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                            const Respond& respond);
struct ApiHandlerRow {
  ApiKey key;
  ApiHandler handle;
};
// The handler table, by key.
std::span<const ApiHandlerRow> ApiHandlerTable();
// The row for `key`, or nullptr: the API is off.
const ApiHandlerRow* FindApiHandler(ApiKey key);
// The versions a request for `key` may have: the codec's range when the key
// has a row, else nullptr.
const ApiVersionRange* HandledVersions(ApiKey key);
// ApiVersions' api_keys: every row with its codec's range, by key.
std::vector<ApiVersionsResponse::Key> HandledApiKeys();

// Maps a storage Status to the Kafka error a client sees for a partition.
ErrorCode ErrorCodeForStorageStatus(const Status& status);
// The same for an operation on `log`, served for `tp` when the request
// began: an I/O error on a log that DeleteTopics removed meanwhile (its
// directory renamed under it) is UNKNOWN_TOPIC_OR_PARTITION, as Kafka
// answers for a partition it no longer hosts, not KAFKA_STORAGE_ERROR; an
// error otherwise unknown (kNotFound) is KAFKA_STORAGE_ERROR when tp's log
// dir is offline now.
ErrorCode ErrorCodeForLogStatus(const TopicRegistry& topics, const TopicPartition& tp,
                                const Log* log, const Status& status);
// The same for a read (Fetch, ListOffsets): damaged bytes of our own log are
// KAFKA_STORAGE_ERROR, not the client's CORRUPT_MESSAGE.
ErrorCode ErrorCodeForLogRead(const TopicRegistry& topics, const TopicPartition& tp, const Log* log,
                              const Status& status);

void HandleApiVersions(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                       const Respond& respond);
// A request whose version is above the advertised ApiVersions max (§3.1):
// UNSUPPORTED_VERSION with the supported list, in v0 form, and a log line.
void HandleUnsupportedApiVersions(const HandlerEnv& env, const RequestHeader& header,
                                  const Respond& respond);
void HandleMetadata(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                    const Respond& respond);
void HandleProduce(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                   const Respond& respond);
void HandleFetch(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                 const Respond& respond);
void HandleListOffsets(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                       const Respond& respond);
void HandleCreateTopics(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond);
void HandleDeleteTopics(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond);
void HandleDescribeConfigs(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                           const Respond& respond);
void HandleFindCoordinator(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                           const Respond& respond);
void HandleInitProducerId(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                          const Respond& respond);
// The admin APIs (issue 19).
void HandleDeleteRecords(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                         const Respond& respond);
void HandleOffsetForLeaderEpoch(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                                const Respond& respond);
void HandleAlterConfigs(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond);
void HandleDescribeLogDirs(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                           const Respond& respond);
void HandleCreatePartitions(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                            const Respond& respond);
void HandleElectLeaders(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond);
void HandleIncrementalAlterConfigs(HandlerEnv& env, const RequestHeader& header,
                                   ProtocolReader& body, const Respond& respond);
void HandleAlterPartitionReassignments(HandlerEnv& env, const RequestHeader& header,
                                       ProtocolReader& body, const Respond& respond);
void HandleListPartitionReassignments(HandlerEnv& env, const RequestHeader& header,
                                      ProtocolReader& body, const Respond& respond);
void HandleDescribeCluster(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                           const Respond& respond);
void HandleDescribeProducers(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                             const Respond& respond);
// Consumer groups (issue 21; coordinator/group_coordinator.h).
void HandleJoinGroup(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                     const Respond& respond);
void HandleSyncGroup(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                     const Respond& respond);
void HandleHeartbeat(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                     const Respond& respond);
void HandleLeaveGroup(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                      const Respond& respond);
void HandleOffsetCommit(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond);
void HandleOffsetFetch(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                       const Respond& respond);
void HandleOffsetDelete(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond);
void HandleDescribeGroups(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                          const Respond& respond);
void HandleListGroups(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                      const Respond& respond);
void HandleDeleteGroups(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                        const Respond& respond);

void HandleAddPartitionsToTxn(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                              const Respond& respond);
void HandleAddOffsetsToTxn(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                           const Respond& respond);
void HandleEndTxn(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                  const Respond& respond);
void HandleTxnOffsetCommit(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                           const Respond& respond);
void HandleDescribeTransactions(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                                const Respond& respond);
void HandleListTransactions(HandlerEnv& env, const RequestHeader& header, ProtocolReader& body,
                            const Respond& respond);

}  // namespace daruma::broker
