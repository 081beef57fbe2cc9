#include "broker/http_server.h"

#include <fmt/format.h>

#include <array>
#include <chrono>
#include <memory>

namespace daruma::broker {
namespace {

constexpr std::chrono::seconds kLingerTime{5};

std::string_view ReasonPhrase(int status) {
  switch (status) {
    case 200:
      return "OK";
    case 400:
      return "Bad Request";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 431:
      return "Request Header Fields Too Large";
    case 503:
      return "Service Unavailable";
    default:
      return "Unknown";
  }
}

// One request/response exchange; owns itself through shared_ptr captures.
class HttpExchange : public std::enable_shared_from_this<HttpExchange> {
 public:
  HttpExchange(asio::ip::tcp::socket socket, HttpRoute route)
      : socket_(std::move(socket)),
        route_(std::move(route)),
        linger_timer_(socket_.get_executor()) {}

  // The whole request head must arrive within kHeadTimeout: a client that
  // connects and says nothing would otherwise hold a descriptor forever.
  void Start() {
    linger_timer_.expires_after(kHeadTimeout);
    linger_timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
      if (!ec) self->Close();
    });
    asio::async_read_until(
        socket_, asio::dynamic_buffer(head_, kMaxRequestHeadBytes), "\r\n\r\n",
        [self = shared_from_this()](const asio::error_code& ec, size_t) { self->OnHead(ec); });
  }

 private:
  void OnHead(const asio::error_code& ec) {
    if (ec == asio::error::not_found) {
      Send({431, "text/plain; charset=utf-8", "request head too large\n"});
      return;
    }
    if (ec) return;  // the peer went away; nothing to answer
    const size_t line_end = head_.find("\r\n");
    const std::string_view line = std::string_view(head_).substr(0, line_end);
    const size_t sp1 = line.find(' ');
    const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
    if (sp2 == std::string_view::npos) {
      Send({400, "text/plain; charset=utf-8", "malformed request line\n"});
      return;
    }
    const std::string_view method = line.substr(0, sp1);
    std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    target = target.substr(0, target.find('?'));
    Send(route_(method, target));
  }

  void Send(const HttpResponse& response) {
    out_ = SerializeHttpResponse(response);
    asio::async_write(socket_, asio::buffer(out_),
                      [self = shared_from_this()](const asio::error_code& ec, size_t) {
                        if (ec) {
                          self->Close();
                          return;
                        }
                        self->Linger();
                      });
  }

  // Lingering close: half-close, then discard what the client still sends
  // until it closes (or kLingerTime passes). Closing with unread bytes would
  // make the kernel send a reset that can destroy the response in flight.
  void Linger() {
    asio::error_code ignored;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    linger_timer_.expires_after(kLingerTime);
    linger_timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
      if (!ec) self->Close();
    });
    Discard();
  }

  void Discard() {
    socket_.async_read_some(asio::buffer(scratch_),
                            [self = shared_from_this()](const asio::error_code& ec, size_t) {
                              if (ec) {
                                self->Close();
                                return;
                              }
                              self->Discard();
                            });
  }

  void Close() {
    asio::error_code ignored;
    linger_timer_.cancel();
    socket_.close(ignored);
  }

  asio::ip::tcp::socket socket_;
  HttpRoute route_;
  std::string head_;
  std::string out_;
  asio::steady_timer linger_timer_;
  std::array<char, 4096> scratch_;
};

}  // namespace

std::string SerializeHttpResponse(const HttpResponse& r) {
  return fmt::format(
      "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{}",
      r.status, ReasonPhrase(r.status), r.content_type, r.body.size(), r.body);
}

Status BindAcceptor(asio::ip::tcp::acceptor& acceptor, const ListenerAddress& address,
                    std::string_view what) {
  asio::error_code ec;
  const asio::ip::address ip = address.host.empty() ? asio::ip::address(asio::ip::address_v4::any())
                                                    : asio::ip::make_address(address.host, ec);
  if (!ec) {
    const asio::ip::tcp::endpoint endpoint(ip, address.port);
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(asio::ip::tcp::acceptor::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  }
  if (ec) {
    asio::error_code ignored;
    acceptor.close(ignored);
    return Status::IoError(
        fmt::format("cannot listen for {} on {}: {}", what, address.ToString(), ec.message()));
  }
  return Status::Ok();
}

HttpServer::HttpServer(asio::io_context& io, HttpRoute route)
    : io_(io), route_(std::move(route)), acceptor_(io), accept_pause_(io) {}

Status HttpServer::Listen(const ListenerAddress& address) {
  DARUMA_RETURN_IF_ERROR(BindAcceptor(acceptor_, address, "HTTP"));
  port_ = acceptor_.local_endpoint().port();
  Accept();
  return Status::Ok();
}

void HttpServer::Stop() {
  asio::error_code ignored;
  acceptor_.close(ignored);
  accept_pause_.cancel();
}

void HttpServer::Accept() {
  acceptor_.async_accept(io_, [this](const asio::error_code& ec, asio::ip::tcp::socket socket) {
    if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
    if (!ec) {
      std::make_shared<HttpExchange>(std::move(socket), route_)->Start();
    } else if (ec != asio::error::connection_aborted) {
      // Out of descriptors (EMFILE...): pause instead of failing in a loop.
      accept_pause_.expires_after(std::chrono::milliseconds(100));
      accept_pause_.async_wait([this](const asio::error_code& e) {
        if (!e && acceptor_.is_open()) Accept();
      });
      return;
    }
    Accept();
  });
}

}  // namespace daruma::broker
