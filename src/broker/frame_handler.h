// FrameHandler: what the network layer needs from request handling.
//
// Contract: Handle() receives one request frame WITHOUT its 4-byte size prefix
// and calls `respond` exactly once, from any thread (the server re-posts it to
// the connection), possibly later (a Fetch parked in the purgatory). Handle()
// is called on the network thread and must not block it: real work goes to
// the request handler threads. `response` is the full response frame
// without the size prefix (bytes, possibly with file ranges spliced in:
// protocol/response_frame.h), or std::nullopt when nothing is sent (a Produce with
// acks=0, or a frame whose header cannot be parsed). `close == true` asks the
// server to close the connection after sending the response, if any (unknown
// API key, unsupported version, unparseable header: Kafka closes too).
//
// Shutdown() completes every parked request now and refuses new work; the
// server calls it once it stops accepting, before waiting for in-flight
// responses.
//
// Clients that go away: every frame comes with its connection's ClientScope.
// When the peer closes or resets while a request is in flight, or the
// connection is closed for any reason, the server sets `gone` and calls
// ClientGone() (on the network thread). The handler then completes that
// client's parked requests at once instead of at their max wait: a client
// may ask for a wait of 2^31 ms, and without this every such fetch of a
// departed client would hold its memory (and a wake-up's disk read) for
// weeks. `respond` is still called exactly once; the server drops an answer
// for a closed connection, and writes it to a half-closed one (a peer that
// shut down only its sending side still reads).
//
// RequestHandler (request_handler.h) is the real implementation; tests of the
// network layer plug in stubs.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/delayed_operation_key.h"
#include "protocol/response_frame.h"

namespace daruma::broker {

using Respond = std::function<void(std::optional<ResponseFrame> response, bool close)>;

// One per connection, shared with the requests it handed over. `gone` goes
// from false to true once and never back.
//
// `frame_done` is set by the server (on the network thread) before each
// Handle() and stays the same until that request is answered. A handler that
// answers later than it stops reading the frame (a parked Fetch) copies it in
// Handle() and calls the copy, from any thread, once the frame's bytes are no
// longer used: the frame then stops counting against queued.max.request.bytes
// (connection.h). Calling it is optional (the answer frees the frame too) and
// harmless after the answer.
// What /health says about a coordinator: still loading its topic (its APIs
// answer COORDINATOR_LOAD_IN_PROGRESS) or serving, and how many groups.
struct CoordinatorStatus {
  bool loaded = false;
  int64_t groups = 0;
};

// The same for the transaction coordinator: transactional ids known, and
// decisions whose markers are not all written yet (retried).
struct TxnCoordinatorStatus {
  bool loaded = false;
  int64_t transactional_ids = 0;
  int64_t pending_markers = 0;
};

// What /metrics says about one kind of delayed operation (a fetch's wait, a
// group's join phase, a member's session, ...): how many wait now and how
// many were forced by their deadline so far.
struct DelayedOperationGauge {
  DelayedOperationKind kind = DelayedOperationKind::kFetchPartition;
  int64_t waiting = 0;
  int64_t expired = 0;
};

struct ClientScope {
  std::atomic<bool> gone{false};
  std::function<void()> frame_done;
  // The peer's address as Kafka prints a client host ("/127.0.0.1"); set
  // before the first request is read, never changed after.
  std::string host;
};
using ClientScopePtr = std::shared_ptr<ClientScope>;

class FrameHandler {
 public:
  virtual ~FrameHandler() = default;
  virtual void Handle(std::vector<uint8_t> frame, ClientScopePtr client, Respond respond) = 0;
  virtual void Shutdown() = 0;
  // `client->gone` is already true. Handlers without parked work ignore it.
  virtual void ClientGone(const ClientScopePtr& client) { (void)client; }
  // Requests parked now, waiting for data or their max wait (for /metrics).
  virtual size_t ParkedRequests() const { return 0; }
  // The group coordinator's state for /health: nullopt when there is none.
  virtual std::optional<CoordinatorStatus> GroupCoordinatorStatus() const { return std::nullopt; }
  // The transaction coordinator's state for /health: nullopt when there is none.
  virtual std::optional<TxnCoordinatorStatus> TransactionCoordinatorStatus() const {
    return std::nullopt;
  }
  // Delayed operations by kind (for /metrics); empty when there are none.
  virtual std::vector<DelayedOperationGauge> DelayedOperations() const { return {}; }
};

}  // namespace daruma::broker
