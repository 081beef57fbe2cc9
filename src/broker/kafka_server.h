// KafkaServer: the Kafka listener. Accepts TCP connections and runs one
// Connection (framing, in-order handling) per client, all on one io_context.
//
// Life cycle:
//   Bind(address)    binds and listens (port 0 = ephemeral; port() tells);
//                    nothing is accepted yet, so a handler that needs the
//                    bound port (Metadata advertises it) can be built next.
//   Start(handler)   starts accepting; `handler` must outlive Stop's `done`.
//   Stop(done)       closes the acceptor, calls handler->Shutdown() (parked
//                    fetches complete now), drains every connection (in-flight
//                    requests finish and are answered; idle ones close) and
//                    runs `done` on the executor when none is left, or after
//                    `drain_timeout`, closing the stragglers.
// Every connection reserves its requests from one RequestMemoryPool
// (queued.max.request.bytes, request_memory_pool.h).
// All methods are called on the io_context's thread.
#pragma once

#include <asio.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>

#include "broker/connection.h"
#include "broker/frame_handler.h"
#include "broker/listener_address.h"
#include "broker/request_memory_pool.h"
#include "broker/request_metrics.h"
#include "common/status.h"

namespace daruma::broker {

struct KafkaServerOptions {
  int32_t max_request_bytes = 104857600;  // socket.request.max.bytes
  int64_t queued_max_request_bytes = -1;  // queued.max.request.bytes; <= 0 unbounded
  EventLog* log = nullptr;                // connection lines (connection.h); null = silent
  std::chrono::milliseconds drain_timeout{30000};
  std::chrono::milliseconds max_idle{600000};  // connections.max.idle.ms
  // After accept(2) fails (EMFILE...), the listener waits this long.
  std::chrono::milliseconds accept_error_pause{100};
};

class KafkaServer {
 public:
  KafkaServer(asio::io_context& io, KafkaServerOptions options, RequestMetrics* metrics,
              NetworkCounters* counters);
  KafkaServer(const KafkaServer&) = delete;
  KafkaServer& operator=(const KafkaServer&) = delete;

  Status Bind(const ListenerAddress& address);
  uint16_t port() const { return port_; }
  void Start(FrameHandler* handler);
  void Stop(std::function<void()> done);
  size_t open_connections() const { return connections_.size(); }

 private:
  void Accept();
  void OnClosed(Connection* c);
  void MaybeFinishStop();

  asio::io_context& io_;
  KafkaServerOptions options_;
  RequestMetrics* metrics_;
  NetworkCounters* counters_;
  // Declared before the connections: muted ones wait in it.
  RequestMemoryPool memory_;
  asio::ip::tcp::acceptor acceptor_;
  asio::steady_timer drain_timer_;
  asio::steady_timer accept_pause_;
  uint16_t port_ = 0;
  FrameHandler* handler_ = nullptr;
  std::map<Connection*, std::shared_ptr<Connection>> connections_;
  bool stopping_ = false;
  std::function<void()> on_stopped_;
};

}  // namespace daruma::broker
