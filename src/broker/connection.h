// Connection: one Kafka client TCP connection.
//
// Framing (protocol spec §1.1): each request is a 4-byte signed big-endian
// size followed by that many bytes. A size < 0 or > max_request_bytes
// (`socket.request.max.bytes`) closes the connection at once: the body is
// never read and never allocated. A peer that closes inside a frame is
// counted as truncated and dropped.
//
// Request memory: the declared size is a promise, not memory. The body is
// read into a buffer that starts at kFirstWindowBytes and doubles, up to the
// declared size, only as bytes actually arrive, so a client that sends a
// 100 MB size and then nothing costs 64 KiB, not 100 MB. Before reading a
// body the connection reserves its declared size from the server's
// RequestMemoryPool (`queued.max.request.bytes`); while the pool has nothing
// left the connection is muted (reads nothing, its idle timer stopped) and it
// resumes when the pool grants the reservation. The reservation and the
// buffer's bytes are given back when the handler says it is done with the
// frame (ClientScope::frame_done: a parked Fetch must not hold the pool while
// it waits for data a muted producer would bring), when it responds, or on
// close before dispatch; they are counted in NetworkCounters' request gauges.
//
// Ordering: one request at a time (Kafka mutes the channel while a request is
// in flight): the next frame is not read until the handler has responded and
// the response has been written (or the handler sent none, acks=0). Later
// frames simply wait in the socket buffer, so pipelined requests are answered
// in order and applied in order. The only buffer a connection owns is the
// frame being read or handled, bounded by max_request_bytes (large ones come
// from and return to the FramePool, so they are not allocated and zeroed per
// request).
//
// Draining (shutdown): Drain() stops reading; an idle connection closes now,
// one with a request in flight closes after writing its response.
//
// Idle timeout (`connections.max.idle.ms`, Kafka's default 10 minutes): from
// the moment a connection starts waiting for a frame (after accepting, or
// after writing a response) the whole next frame must arrive within the
// timeout, else the connection is closed and counted in closed_idle. A
// request being handled (e.g. a parked long-poll fetch) is never idle. Nor
// is one writing its response while the client takes bytes of it; a client
// that takes none for the timeout is closed the same way (Kafka's Selector
// counts a socket without activity as idle, whatever it has left to send):
// one that never reads would otherwise hold the response's memory and the
// segment files it sends from for good.
//
// Writing a response: the size prefix and the inline bytes go out with
// write(); each file range spliced into the frame (a Fetch's log bytes) goes
// with sendfile(2) from the segment file to the socket, no user-space copy.
// The socket is non-blocking: sendfile sends what fits and the rest waits
// for the socket to be writable again.
//
// Clients that leave: a peer that closes, resets or stops reading never takes
// more than its own connection. Writes never raise SIGPIPE (asio sends with
// MSG_NOSIGNAL; sendfile(2) has no such flag, so the broker ignores SIGPIPE
// process-wide: IgnoreSigpipe in fatal_signals.h, called once by
// KafkaServer::Start).
// EPIPE, ECONNRESET or any other error from write or sendfile closes that
// connection and is counted (write_errors). While a request is in flight the
// connection watches the socket for the peer's EOF or reset: then the client
// is "gone" (ClientScope, frame_handler.h) and the handler completes its
// parked fetch now. After an EOF the connection still writes the answer (the
// peer may have shut down only its sending side) and closes when the next
// read sees the EOF; after a reset it closes at once. Close() always marks
// the client gone, so nothing parked outlives its connection's purpose.
//
// Logging (event_log.h): connection_opened / connection_closed (with the
// reason and the number of requests) at DEBUG; a refused size field at WARN,
// rate-limited, naming the peer, the size and socket.request.max.bytes.
//
// Threading: everything runs on the socket's executor (one io_context thread);
// the handler's respond callback is re-posted there whatever thread calls it.
#pragma once

#include <array>
#include <asio.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/event_log.h"
#include "broker/frame_handler.h"
#include "broker/request_memory_pool.h"
#include "broker/request_metrics.h"

namespace daruma::broker {

struct ConnectionContext {
  FrameHandler* handler = nullptr;
  RequestMetrics* metrics = nullptr;
  NetworkCounters* counters = nullptr;
  RequestMemoryPool* memory = nullptr;  // queued.max.request.bytes; null = unbounded
  EventLog* log = nullptr;  // connections at DEBUG, refused sizes at WARN; null = silent
  int32_t max_request_bytes = 104857600;       // socket.request.max.bytes
  std::chrono::milliseconds max_idle{600000};  // connections.max.idle.ms; < 0 = never
};

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  // The first body buffer of a fresh (not pooled) frame; it doubles from there.
  static constexpr size_t kFirstWindowBytes = 64 << 10;

  using OnClosed = std::function<void(Connection*)>;

  Connection(asio::ip::tcp::socket socket, ConnectionContext context, OnClosed on_closed);
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  void Start();
  void Drain();
  // Closes now, dropping any in-flight response (drain timeout).
  void ForceClose() { Close("drain_timeout"); }
  bool closed() const { return closed_; }

 private:
  void ReadSize();
  void ArmIdleTimer();
  void OnIdleTimer(const asio::error_code& ec);
  // While a response is written: the same timeout, restarted as long as
  // some of it was taken since the last expiry.
  void ArmWriteTimer();
  void OnWriteTimer(const asio::error_code& ec);
  // Both: idle_timer_ fires `on_expiry` after connections.max.idle.ms
  // (never when it is negative), cancelling the wait before.
  void ArmTimer(void (Connection::*on_expiry)(const asio::error_code&));
  void OnSize(const asio::error_code& ec, size_t n);
  // Called once the declared size is reserved (now, or when the pool grants).
  void OnMemoryGranted();
  // Reads what arrives into the window, doubling it when full.
  void ReadBody();
  void OnBody(const asio::error_code& ec, size_t n);
  // Keeps counters->request_memory_bytes equal to what this frame holds.
  void AccountBuffer(int64_t bytes);
  // Gives back the reservation and the buffer's bytes (after the response,
  // or on close before dispatch).
  void ReleaseRequestMemory();
  void Dispatch();
  // While a request is in flight: wakes when the socket turns readable and
  // tells a peer's EOF or reset from pipelined bytes (recv MSG_PEEK).
  void WatchPeer();
  void OnPeerReadable(const asio::error_code& ec);
  // Marks the client gone and tells the handler (once).
  void MarkClientGone();
  void OnResponse(std::optional<ResponseFrame> response, bool close);
  // Writes inline bytes [from, splice `next`.at) (the size prefix too when
  // from == 0), then sends splice `next`, and so on to the end of the frame.
  void WriteBytes(size_t from, size_t next, bool close);
  // Sends splice `index` from `done` bytes into it.
  void SendSlice(size_t index, uint64_t done, bool close);
  void OnWritten(const asio::error_code& ec, bool close);
  // `reason` names why in the DEBUG connection_closed line.
  void Close(std::string_view reason);
  // The WARN line for a size field refused before reading the body.
  void LogRefusedSize(int32_t size, std::string_view reason);

  asio::ip::tcp::socket socket_;
  asio::steady_timer idle_timer_;  // waiting for a frame, or writing a response
  bool writing_ = false;           // a response is being written
  bool write_progress_ = false;    // bytes of it went out since ArmWriteTimer
  ConnectionContext context_;
  OnClosed on_closed_;
  std::array<uint8_t, 4> size_bytes_{};
  std::vector<uint8_t> frame_;
  size_t declared_ = 0;          // size of the frame being read
  size_t received_ = 0;          // body bytes of it read so far
  int64_t reserved_bytes_ = 0;   // held in context_.memory
  int64_t accounted_bytes_ = 0;  // in counters->request_memory_bytes
  RequestMemoryPool::Ticket ticket_ = 0;
  bool muted_ = false;            // waiting for the pool to grant
  std::string peer_ = "unknown";  // "ip:port", for log lines
  int64_t requests_ = 0;          // dispatched on this connection
  ResponseFrame response_;
  ClientScopePtr client_ = std::make_shared<ClientScope>();
  int16_t api_key_ = -1;
  std::chrono::steady_clock::time_point started_;
  bool in_flight_ = false;
  bool watching_peer_ = false;
  bool draining_ = false;
  bool closed_ = false;
};

}  // namespace daruma::broker
