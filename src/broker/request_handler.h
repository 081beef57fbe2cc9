// RequestHandler: Kafka's KafkaApis for one node — decodes a request frame,
// dispatches on its header through the handler table (api_handlers.h: a row
// is the one place an API is switched on) and encodes the response.
//
// Contract (FrameHandler, the interface to the network layer):
// - Handle() takes one frame WITHOUT its 4-byte size prefix and calls
//   `respond` exactly once, on some request thread, possibly later (a Fetch
//   parked in the purgatory): with the whole response frame (header + body,
//   no size prefix), or std::nullopt when nothing is sent (Produce acks=0).
// - `close == true` asks the server to close the connection after sending
//   the response, if any. As Kafka does (spec §1.1, §3.1): an unparseable
//   header, an unknown or unadvertised API key, a version outside the
//   advertised range (except ApiVersions, answered UNSUPPORTED_VERSION in v0
//   form) and an undecodable body close without a response; an acks=0 Produce
//   with a failed partition closes after "sending" nothing.
// - Each of those refusals, and every response carrying an error code, is
//   one rate-limited line on ctx.log (request_log.h).
// - Shutdown() completes every parked Fetch now (with what is available);
//   frames handed over before it are still handled, later ones are answered
//   by closing.
//
// Threading (Kafka's KafkaApis on KafkaRequestHandlerPool threads): Handle()
// only posts the frame to `request_executor` (the broker's num.io.threads
// pool), so network I/O never waits for a disk. Requests of different
// connections run in parallel; one connection has one request in flight at a
// time (connection.h), which keeps its order. `respond` is called on a pool
// thread (or, for a parked Fetch, on the thread of the produce that woke it);
// the server re-posts it to the socket. Shared state and its locks: the
// TopicRegistry (its own mutexes), the purgatory (delayed_fetch.h), each Log
// (its own mutex), LogManager (thread-safe at runtime) and `hw_mu_` below;
// BrokerContext is read-only once built. Deadlines — fetch max waits and the
// group coordinator's sessions, join and sync phases, offset retention — are
// delayed operations and jobs on the handler's own Scheduler (one thread,
// judged on ctx.clock); a forced fetch is handed from it to
// `request_executor`. Handle() and Shutdown() may be called from any thread.
// Destroy the handler only after `request_executor` has drained (queued work
// holds `this`) and before the LogManager (the registry points into it).
#pragma once

#include <asio.hpp>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "broker/broker_context.h"
#include "broker/delayed_fetch.h"
#include "broker/fetch_slice_reader.h"
#include "broker/frame_handler.h"
#include "broker/topic_registry.h"
#include "broker/txn_marker_writer.h"
#include "common/scheduler.h"
#include "common/status.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/group_storage.h"
#include "coordinator/producer_id_manager.h"
#include "coordinator/transaction_coordinator.h"

namespace daruma::broker {

class RequestHandler final : public FrameHandler {
 public:
  using Respond = broker::Respond;

  // Builds the topic registry from ctx.log_manager (already started); check
  // init_status() before serving. Tests may pass a single-threaded executor,
  // to run requests deterministically.
  RequestHandler(BrokerContext ctx, asio::any_io_executor request_executor);
  ~RequestHandler() override;
  RequestHandler(const RequestHandler&) = delete;
  RequestHandler& operator=(const RequestHandler&) = delete;

  void Handle(std::vector<uint8_t> frame, ClientScopePtr client, Respond respond) override;
  void Shutdown() override;
  // Forces the client's parked fetches now (on the request pool).
  void ClientGone(const ClientScopePtr& client) override;
  size_t ParkedRequests() const override { return purgatory_.parked(); }
  std::optional<CoordinatorStatus> GroupCoordinatorStatus() const override;
  std::optional<TxnCoordinatorStatus> TransactionCoordinatorStatus() const override;
  std::vector<DelayedOperationGauge> DelayedOperations() const override;

  const Status& init_status() const { return init_status_; }
  TopicRegistry& topics() { return topics_; }

 private:
  void HandleRequest(std::vector<uint8_t>& frame, const ClientScopePtr& client,
                     const Respond& respond);
  Status OpenProducerIds();
  // Builds the group and transaction coordinators on `scheduler_` and loads
  // `__consumer_offsets`, then `__transaction_state`, on a thread of its own
  // (their APIs answer COORDINATOR_LOAD_IN_PROGRESS meanwhile).
  void StartCoordinators();
  void CompactInternalTopic(const std::string& name);
  void RaiseProducerIdFloor(int32_t partitions);
  void LoadGroups();
  void LoadTransactions();
  // Aborts, once `transaction.max.timeout.ms` has passed since their last
  // batch, the open transactions the logs hold that the transaction
  // coordinator does not know (written by another broker, or whose state
  // was lost): nothing else would ever end them, and their partitions' last
  // stable offsets would stay behind for good. Run once, after the load, on
  // the transactions OpenProducerIds found.
  void AbortHangingTransactions();
  struct OpenTxnAtStart;
  // Whether the partition's producer state still has `open` as the
  // producer's open transaction.
  bool StillOpen(const OpenTxnAtStart& open) const;
  // A coordinator's view of its internal topic: `create` creates every
  // partition with `overrides`; a partition found at start-up but not
  // loaded, or missing while a log dir is offline, is kNotFound, one in an
  // offline dir kIoError, one that does not exist nullptr.
  LogGroupStorage::LogFor CoordinatorLogFor(std::string topic, int32_t partitions,
                                            TopicOverrides overrides);

  BrokerContext ctx_;  // read-only after construction
  asio::any_io_executor request_executor_;
  // Before everything whose delayed operations or jobs it runs; shut down
  // first in the destructor.
  std::unique_ptr<Scheduler> scheduler_;
  TopicRegistry topics_;
  DelayedFetchPurgatory purgatory_;
  FetchSliceReader slices_;  // ctx.zero_copy_fs; off when null
  // Serialises "read the log end, raise the high watermark" of concurrent
  // produces, so a partition's high watermark never moves back (Kafka's
  // maybeIncrementLeaderHW). Held only around those two in-memory calls.
  std::mutex hw_mu_;
  // InitProducerId's ids, kept in the first online log dir; null when none is
  // online.
  std::unique_ptr<ProducerIdManager> producer_ids_;
  std::unique_ptr<LogGroupStorage> group_storage_;
  std::unique_ptr<GroupCoordinator> groups_;
  std::unique_ptr<LogGroupStorage> txn_storage_;
  std::unique_ptr<LogTxnMarkerWriter> txn_markers_;
  std::unique_ptr<TransactionCoordinator> txns_;
  std::thread coordinator_loader_;
  // The open transactions the logs held at start-up (OpenProducerIds), for
  // AbortHangingTransactions.
  struct OpenTxnAtStart {
    TopicPartition tp;
    int64_t producer_id = -1;
    int16_t producer_epoch = -1;
    int64_t first_offset = -1;
    int64_t last_timestamp = -1;
  };
  std::vector<OpenTxnAtStart> open_txns_at_start_;
  Status init_status_;
  std::atomic<bool> shut_down_{false};
};

}  // namespace daruma::broker
