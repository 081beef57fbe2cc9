// Helpers for the network tests of tests/broker: a blocking Kafka-framing
// client with receive timeouts (a broken server fails a test instead of
// hanging it), a scriptable FrameHandler stub and a tiny HTTP GET.
#pragma once

#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "broker/frame_handler.h"

namespace daruma::broker::testing {

inline void SetReceiveTimeout(asio::ip::tcp::socket& s, int seconds) {
  timeval tv{seconds, 0};
  ::setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
}

class FrameClient {
 public:
  explicit FrameClient(uint16_t port) : socket_(io_) {
    socket_.connect({asio::ip::make_address("127.0.0.1"), port});
    SetReceiveTimeout(socket_, 10);
  }
  void SendRaw(const std::vector<uint8_t>& bytes) { asio::write(socket_, asio::buffer(bytes)); }
  void SendSize(int32_t size) {
    const uint32_t u = uint32_t(size);
    SendRaw({uint8_t(u >> 24), uint8_t(u >> 16), uint8_t(u >> 8), uint8_t(u)});
  }
  void SendFrame(const std::vector<uint8_t>& body) {
    SendSize(int32_t(body.size()));
    SendRaw(body);
  }
  // One response frame, or nullopt on EOF/error.
  std::optional<std::vector<uint8_t>> ReadFrame() {
    uint8_t size_bytes[4];
    asio::error_code ec;
    asio::read(socket_, asio::buffer(size_bytes), ec);
    if (ec) return std::nullopt;
    const uint32_t size = uint32_t(size_bytes[0]) << 24 | uint32_t(size_bytes[1]) << 16 |
                          uint32_t(size_bytes[2]) << 8 | uint32_t(size_bytes[3]);
    std::vector<uint8_t> body(size);
    asio::read(socket_, asio::buffer(body), ec);
    if (ec) return std::nullopt;
    return body;
  }
  // True when the server closed the connection (EOF or reset, not a timeout).
  bool ClosedByPeer() {
    uint8_t b;
    asio::error_code ec;
    socket_.read_some(asio::buffer(&b, 1), ec);
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }
  void ShutdownSend() { socket_.shutdown(asio::ip::tcp::socket::shutdown_send); }

 private:
  asio::io_context io_;
  asio::ip::tcp::socket socket_;
};

// Calls `on_frame` for every frame (on the server's io thread).
class StubHandler : public FrameHandler {
 public:
  using OnFrame = std::function<void(std::vector<uint8_t> frame, Respond respond)>;
  explicit StubHandler(OnFrame on_frame) : on_frame_(std::move(on_frame)) {}
  void Handle(std::vector<uint8_t> frame, ClientScopePtr client, Respond respond) override {
    ++calls;
    last_client = std::move(client);
    on_frame_(std::move(frame), std::move(respond));
  }
  void Shutdown() override { ++shutdowns; }
  void ClientGone(const ClientScopePtr& client) override {
    EXPECT_TRUE(client->gone);
    ++clients_gone;
  }

  std::atomic<int> calls{0};
  std::atomic<int> shutdowns{0};
  std::atomic<int> clients_gone{0};
  ClientScopePtr last_client;  // of the latest frame (the io thread writes it)

 private:
  OnFrame on_frame_;
};

// Polls `done` every 5 ms for up to `timeout_ms`; its last value.
template <typename F>
bool Eventually(F done, int timeout_ms = 10000) {
  for (int waited = 0; waited < timeout_ms; waited += 5) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

struct HttpResult {
  int status = 0;
  std::string head;
  std::string body;
};

inline HttpResult HttpGet(uint16_t port, const std::string& path) {
  asio::io_context io;
  asio::ip::tcp::socket s(io);
  s.connect({asio::ip::make_address("127.0.0.1"), port});
  SetReceiveTimeout(s, 10);
  const std::string request = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n";
  asio::write(s, asio::buffer(request));
  std::string all;
  asio::error_code ec;
  asio::read(s, asio::dynamic_buffer(all), ec);
  HttpResult r;
  const size_t split = all.find("\r\n\r\n");
  if (split == std::string::npos) return r;
  r.head = all.substr(0, split);
  r.body = all.substr(split + 4);
  if (r.head.size() > 12) r.status = std::stoi(r.head.substr(9, 3));
  return r;
}

}  // namespace daruma::broker::testing
