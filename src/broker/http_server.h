// HttpServer: a minimal HTTP/1.1 server for `/health` and `/metrics`.
//
// One exchange per connection: read the request head (at most
// kMaxRequestHeadBytes, else 431; within kHeadTimeout, else closed), call the route with the method
// and the target (query string stripped), write the response with `Connection: close` and a
// Content-Length, close. Request bodies are ignored. Everything runs on the io_context passed in;
// the route is called on it and must not block for long (it renders from atomics and small maps).
#pragma once

#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "broker/listener_address.h"
#include "common/status.h"

namespace daruma::broker {

inline constexpr size_t kMaxRequestHeadBytes = 8192;
inline constexpr std::chrono::seconds kHeadTimeout{10};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

using HttpRoute = std::function<HttpResponse(std::string_view method, std::string_view path)>;

// "HTTP/1.1 200 OK\r\n..." with Content-Type, Content-Length, Connection: close.
std::string SerializeHttpResponse(const HttpResponse& r);

class HttpServer {
 public:
  HttpServer(asio::io_context& io, HttpRoute route);
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Binds and starts accepting. kIoError naming the address on failure.
  Status Listen(const ListenerAddress& address);
  uint16_t port() const { return port_; }
  // Closes the acceptor; exchanges already accepted finish on their own.
  void Stop();

 private:
  void Accept();

  asio::io_context& io_;
  HttpRoute route_;
  asio::ip::tcp::acceptor acceptor_;
  asio::steady_timer accept_pause_;
  uint16_t port_ = 0;
};

// Binds `acceptor` to `address` (reuse_address on, listen backlog default).
// Shared with the Kafka listener. kIoError naming the address on failure.
Status BindAcceptor(asio::ip::tcp::acceptor& acceptor, const ListenerAddress& address,
                    std::string_view what);

}  // namespace daruma::broker
