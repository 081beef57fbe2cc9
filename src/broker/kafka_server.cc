#include "broker/kafka_server.h"

#include "broker/fatal_signals.h"
#include "broker/http_server.h"

namespace daruma::broker {

KafkaServer::KafkaServer(asio::io_context& io, KafkaServerOptions options, RequestMetrics* metrics,
                         NetworkCounters* counters)
    : io_(io),
      options_(options),
      metrics_(metrics),
      counters_(counters),
      memory_(options.queued_max_request_bytes),
      acceptor_(io),
      drain_timer_(io),
      accept_pause_(io) {}

Status KafkaServer::Bind(const ListenerAddress& address) {
  DARUMA_RETURN_IF_ERROR(BindAcceptor(acceptor_, address, "Kafka clients"));
  port_ = acceptor_.local_endpoint().port();
  return Status::Ok();
}

void KafkaServer::Start(FrameHandler* handler) {
  IgnoreSigpipe();  // before the first connection: sendfile has no MSG_NOSIGNAL
  handler_ = handler;
  Accept();
}

void KafkaServer::Accept() {
  acceptor_.async_accept(io_, [this](const asio::error_code& ec, asio::ip::tcp::socket socket) {
    if (stopping_ || ec == asio::error::operation_aborted) return;
    if (ec) {
      ++counters_->accept_errors;
      // Out of descriptors or memory: accepting again at once would fail at
      // once, a busy loop on the network thread. Pause; the connections that
      // close meanwhile give the descriptors back. (A client that gave up
      // before accept, ECONNABORTED, is simply skipped.)
      if (ec != asio::error::connection_aborted) {
        accept_pause_.expires_after(options_.accept_error_pause);
        accept_pause_.async_wait([this](const asio::error_code& e) {
          if (!e && !stopping_) Accept();
        });
        return;
      }
    } else {
      ConnectionContext context{handler_,         metrics_,     counters_,
                                &memory_,         options_.log, options_.max_request_bytes,
                                options_.max_idle};
      auto c = std::make_shared<Connection>(std::move(socket), context,
                                            [this](Connection* closed) { OnClosed(closed); });
      connections_.emplace(c.get(), c);
      c->Start();
    }
    Accept();
  });
}

void KafkaServer::OnClosed(Connection* c) {
  // Deferred: the connection may be inside one of its own callbacks.
  asio::post(io_, [this, c] {
    connections_.erase(c);
    MaybeFinishStop();
  });
}

void KafkaServer::Stop(std::function<void()> done) {
  if (stopping_) return;
  stopping_ = true;
  on_stopped_ = std::move(done);
  asio::error_code ignored;
  acceptor_.close(ignored);
  accept_pause_.cancel();
  if (handler_ != nullptr) handler_->Shutdown();
  // Copy: Drain may close a connection, which erases it later via OnClosed.
  std::vector<std::shared_ptr<Connection>> open;
  for (const auto& [ptr, c] : connections_) open.push_back(c);
  for (const auto& c : open) c->Drain();
  drain_timer_.expires_after(options_.drain_timeout);
  drain_timer_.async_wait([this](const asio::error_code& ec) {
    if (ec) return;
    std::vector<std::shared_ptr<Connection>> stragglers;
    for (const auto& [ptr, c] : connections_) stragglers.push_back(c);
    for (const auto& c : stragglers) c->ForceClose();
  });
  MaybeFinishStop();
}

void KafkaServer::MaybeFinishStop() {
  if (!stopping_ || !connections_.empty() || !on_stopped_) return;
  drain_timer_.cancel();
  auto done = std::move(on_stopped_);
  on_stopped_ = nullptr;
  asio::post(io_, std::move(done));
}

}  // namespace daruma::broker
