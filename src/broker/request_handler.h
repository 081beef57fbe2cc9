// RequestHandler: Kafka's KafkaApis for one node — decodes a request frame,
// dispatches on its header to one handler per API and encodes the response.
//
// Contract (FrameHandler, the interface to the network layer):
// - Handle() takes one frame WITHOUT its 4-byte size prefix and calls
//   `respond` exactly once, on the handler's strand, possibly later (a Fetch
//   parked in the purgatory): with the whole response frame (header + body,
//   no size prefix), or std::nullopt when nothing is sent (Produce acks=0).
// - `close == true` asks the server to close the connection after sending
//   the response, if any. As Kafka does (spec §1.1, §3.1): an unparseable
//   header, an unknown or unadvertised API key, a version outside the
//   advertised range (except ApiVersions, answered UNSUPPORTED_VERSION in v0
//   form) and an undecodable body close without a response; an acks=0 Produce
//   with a failed partition closes after "sending" nothing.
// - Shutdown() completes every parked Fetch now (with what is available) and
//   answers later requests by closing.
//
// Threading: all request work runs serialised on a strand of `executor`;
// handlers call blocking Log methods there (appends, reads, fsync). Handle()
// and Shutdown() may be called from any thread. Destroy the handler only
// after the executor's io_context has stopped running (queued work holds
// `this`), and before the LogManager (the topic registry points into it).
#pragma once

#include <asio.hpp>
#include <cstdint>
#include <memory>
#include <vector>

#include "broker/broker_context.h"
#include "broker/delayed_fetch.h"
#include "broker/frame_handler.h"
#include "broker/topic_registry.h"
#include "common/status.h"

namespace daruma::broker {

class RequestHandler final : public FrameHandler {
 public:
  using Respond = broker::Respond;

  // Builds the topic registry from ctx.log_manager (already started); check
  // init_status() before serving.
  RequestHandler(BrokerContext ctx, asio::any_io_executor executor);
  ~RequestHandler() override;
  RequestHandler(const RequestHandler&) = delete;
  RequestHandler& operator=(const RequestHandler&) = delete;

  void Handle(std::vector<uint8_t> frame, Respond respond) override;
  void Shutdown() override;

  const Status& init_status() const { return init_status_; }
  TopicRegistry& topics() { return topics_; }

 private:
  void HandleOnStrand(const std::vector<uint8_t>& frame, Respond respond);

  BrokerContext ctx_;
  asio::strand<asio::any_io_executor> strand_;
  TopicRegistry topics_;
  DelayedFetchPurgatory purgatory_;
  Status init_status_;
  bool shut_down_ = false;
};

}  // namespace daruma::broker
