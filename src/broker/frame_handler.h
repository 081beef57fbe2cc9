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
// RequestHandler (request_handler.h) is the real implementation; tests of the
// network layer plug in stubs.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "broker/protocol/response_frame.h"

namespace daruma::broker {

using Respond = std::function<void(std::optional<ResponseFrame> response, bool close)>;

class FrameHandler {
 public:
  virtual ~FrameHandler() = default;
  virtual void Handle(std::vector<uint8_t> frame, Respond respond) = 0;
  virtual void Shutdown() = 0;
};

}  // namespace daruma::broker
