#include "broker/connection.h"

#include <fmt/format.h>
#include <sys/sendfile.h>
#include <sys/socket.h>

#include <cerrno>

#include "broker/fatal_signals.h"
#include "broker/frame_pool.h"

namespace daruma::broker {
namespace {

// The most one write() of a response's inline bytes asks for (asio's own
// transfer_all default).
constexpr size_t kWriteChunkBytes = 64 << 10;

int32_t ReadBigEndian32(const uint8_t* p) {
  return int32_t(uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 |
                 uint32_t(p[3]));
}

}  // namespace

Connection::Connection(asio::ip::tcp::socket socket, ConnectionContext context, OnClosed on_closed)
    : socket_(std::move(socket)),
      idle_timer_(socket_.get_executor()),
      context_(context),
      on_closed_(std::move(on_closed)) {}

void Connection::Start() {
  asio::error_code ignored;
  socket_.set_option(asio::ip::tcp::no_delay(true), ignored);
  ++context_.counters->connections_active;
  ++context_.counters->connections_accepted;
  asio::error_code ec;
  const auto remote = socket_.remote_endpoint(ec);
  if (!ec) {
    peer_ = fmt::format("{}:{}", remote.address().to_string(), remote.port());
    client_->host = "/" + remote.address().to_string();
  }
  if (context_.log != nullptr && context_.log->Enabled(LogLevel::kDebug)) {
    context_.log->Write(LogLevel::kDebug, "connection_opened", LogFields().Add("peer", peer_));
  }
  ReadSize();
}

void Connection::Drain() {
  draining_ = true;
  if (!in_flight_) Close("drain");
}

void Connection::ReadSize() {
  ArmIdleTimer();
  asio::async_read(
      socket_, asio::buffer(size_bytes_),
      [self = shared_from_this()](const asio::error_code& ec, size_t n) { self->OnSize(ec, n); });
}

void Connection::OnSize(const asio::error_code& ec, size_t n) {
  if (closed_) return;
  if (ec) {
    // EOF between frames is an ordinary disconnect; inside the size, a truncation.
    if (n > 0) ++context_.counters->frames_truncated;
    Close(n > 0 ? "truncated" : "eof");
    return;
  }
  const int32_t size = ReadBigEndian32(size_bytes_.data());
  if (size < 0) {
    ++context_.counters->frames_negative;
    LogRefusedSize(size, "negative request size");
    Close("negative_size");
    return;
  }
  if (size > context_.max_request_bytes) {
    // As Kafka (InvalidReceiveException): the body is never read.
    ++context_.counters->frames_too_large;
    LogRefusedSize(size, "request size is above socket.request.max.bytes");
    Close("too_large");
    return;
  }
  declared_ = size_t(size);
  received_ = 0;
  if (context_.memory == nullptr) return OnMemoryGranted();
  const int64_t bytes = size;
  // The pool grants on the thread that releases: come back to ours. The
  // waiter holds the connection, so the grant always finds it (closed or not).
  auto on_grant = [self = shared_from_this(), executor = socket_.get_executor(), bytes] {
    asio::post(executor, [self, bytes] {
      self->reserved_bytes_ = bytes;
      self->context_.counters->request_queued_bytes += bytes;
      if (self->closed_) return self->ReleaseRequestMemory();
      self->muted_ = false;
      --self->context_.counters->connections_muted;
      self->ArmIdleTimer();  // the client may take a whole timeout from now
      self->OnMemoryGranted();
    });
  };
  if (context_.memory->Reserve(bytes, std::move(on_grant), &ticket_)) {
    reserved_bytes_ = bytes;
    context_.counters->request_queued_bytes += bytes;
    return OnMemoryGranted();
  }
  // Muted: waiting for the pool is not the client idling.
  muted_ = true;
  ++context_.counters->connections_muted;
  idle_timer_.cancel();
}

void Connection::OnMemoryGranted() {
  frame_ = FramePool::Default().TakeWindow(declared_, kFirstWindowBytes);
  AccountBuffer(int64_t(frame_.capacity()));
  ReadBody();
}

void Connection::ReadBody() {
  if (received_ == declared_) {
    idle_timer_.cancel();
    return Dispatch();
  }
  if (received_ == frame_.size()) {
    // Doubling keeps the copies of a growing frame under its final size.
    frame_.resize(std::min(declared_, std::max(2 * frame_.size(), kFirstWindowBytes)));
    AccountBuffer(int64_t(frame_.capacity()));
  }
  socket_.async_read_some(
      asio::buffer(frame_.data() + received_, frame_.size() - received_),
      [self = shared_from_this()](const asio::error_code& ec, size_t n) { self->OnBody(ec, n); });
}

void Connection::OnBody(const asio::error_code& ec, size_t n) {
  if (closed_) return;
  if (ec) {
    ++context_.counters->frames_truncated;
    Close("truncated");
    return;
  }
  received_ += n;
  ReadBody();
}

void Connection::AccountBuffer(int64_t bytes) {
  context_.counters->request_memory_bytes += bytes - accounted_bytes_;
  accounted_bytes_ = bytes;
}

void Connection::ReleaseRequestMemory() {
  AccountBuffer(0);
  if (reserved_bytes_ == 0) return;
  context_.counters->request_queued_bytes -= reserved_bytes_;
  const int64_t bytes = reserved_bytes_;
  reserved_bytes_ = 0;
  context_.memory->Release(bytes);
}

void Connection::LogRefusedSize(int32_t size, std::string_view reason) {
  if (context_.log == nullptr) return;
  LogFields f;
  f.Add("peer", peer_)
      .Add("size", size)
      .Add("socket.request.max.bytes", context_.max_request_bytes)
      .Add("reason", reason)
      .Add("action", "close");
  context_.log->WriteLimited(LogLevel::kWarn, "request_size_refused", "request_size_refused", f);
}

void Connection::Dispatch() {
  in_flight_ = true;
  ++requests_;
  api_key_ = frame_.size() >= 2 ? int16_t(uint16_t(frame_[0]) << 8 | frame_[1]) : -1;
  NoteRequestKind(api_key_);
  started_ = std::chrono::steady_clock::now();
  auto executor = socket_.get_executor();
  // Only this request's frame: once it is answered (in_flight_ false) the
  // next frame may be reserved already, and a late call must not free it.
  client_->frame_done = [weak = weak_from_this(), executor, request = requests_] {
    asio::post(executor, [weak, request] {
      std::shared_ptr<Connection> self = weak.lock();
      if (self && self->in_flight_ && self->requests_ == request) self->ReleaseRequestMemory();
    });
  };
  context_.handler->Handle(
      std::move(frame_), client_,
      [self = shared_from_this(), executor](std::optional<ResponseFrame> response, bool close) {
        asio::post(executor, [self, response = std::move(response), close]() mutable {
          self->OnResponse(std::move(response), close);
        });
      });
  frame_ = {};
  WatchPeer();
}

void Connection::WatchPeer() {
  if (watching_peer_ || closed_ || client_->gone) return;
  watching_peer_ = true;
  socket_.async_wait(asio::ip::tcp::socket::wait_read,
                     [self = shared_from_this()](const asio::error_code& ec) {
                       self->watching_peer_ = false;
                       self->OnPeerReadable(ec);
                     });
}

void Connection::OnPeerReadable(const asio::error_code& ec) {
  if (ec || closed_ || !in_flight_) return;
  uint8_t byte;
  const ssize_t n = ::recv(socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n > 0) return;  // pipelined bytes: read after the answer, in order
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return WatchPeer();
  ++context_.counters->peer_gone_in_flight;
  if (n == 0) {
    // EOF: perhaps only a half-close; the answer is still written.
    MarkClientGone();
    return;
  }
  Close("reset");  // or another socket error: nobody will read an answer
}

void Connection::MarkClientGone() {
  if (client_->gone.exchange(true)) return;
  if (in_flight_) context_.handler->ClientGone(client_);
}

void Connection::OnResponse(std::optional<ResponseFrame> response, bool close) {
  // The handler is done with the frame (it may still be giving the buffer
  // back to the FramePool, which holds at most kMaxBytes anyway).
  ReleaseRequestMemory();
  const std::chrono::duration<double> latency = std::chrono::steady_clock::now() - started_;
  context_.metrics->Record(api_key_, latency.count());
  if (close) ++context_.counters->closed_by_handler;
  if (closed_) return;
  if (!response) {
    OnWritten({}, close);
    return;
  }
  response_ = std::move(*response);
  const uint32_t size = uint32_t(response_.size());
  size_bytes_ = {uint8_t(size >> 24), uint8_t(size >> 16), uint8_t(size >> 8), uint8_t(size)};
  writing_ = true;
  ArmWriteTimer();
  WriteBytes(0, 0, close);
}

void Connection::WriteBytes(size_t from, size_t next, bool close) {
  const size_t to =
      next < response_.splices.size() ? response_.splices[next].at : response_.bytes.size();
  const asio::const_buffer prefix =
      from == 0 && next == 0 ? asio::buffer(size_bytes_) : asio::const_buffer();
  const std::array<asio::const_buffer, 2> buffers = {
      prefix, asio::buffer(response_.bytes.data() + from, to - from)};
  auto then = [self = shared_from_this(), next, close](const asio::error_code& ec, size_t sent) {
    // The condition below is not asked again after the write that ends the
    // buffers: a write that took everything left counts here.
    if (sent > 0) self->write_progress_ = true;
    if (ec || self->closed_) return self->OnWritten(ec, close);
    if (next == self->response_.splices.size()) return self->OnWritten({}, close);
    self->SendSlice(next, 0, close);
  };
  if (asio::buffer_size(buffers) == 0) return then({}, 0);
  // transfer_all's condition, noting each write that took bytes.
  auto progress = [self = shared_from_this()](const asio::error_code& ec, size_t sent) -> size_t {
    if (sent > 0) self->write_progress_ = true;
    return ec ? 0 : kWriteChunkBytes;
  };
  asio::async_write(socket_, buffers, std::move(progress), std::move(then));
}

void Connection::SendSlice(size_t index, uint64_t done, bool close) {
  const FileSlice& slice = response_.splices[index].slice;
  asio::error_code ec;
  socket_.native_non_blocking(true, ec);
  while (!ec && done < slice.length) {
    off_t offset = off_t(slice.position + done);
    const ssize_t n =
        ::sendfile(socket_.native_handle(), slice.file->fd(), &offset, size_t(slice.length - done));
    if (n > 0) {
      done += uint64_t(n);
      write_progress_ = true;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      socket_.async_wait(asio::ip::tcp::socket::wait_write, [self = shared_from_this(), index, done,
                                                             close](const asio::error_code& e) {
        if (e || self->closed_) return self->OnWritten(e, close);
        self->SendSlice(index, done, close);
      });
      return;
    } else {
      // n == 0: the file ended before the slice did (it shrank): the frame
      // cannot be completed, so the connection is closed.
      ec = n < 0 ? asio::error_code(errno, asio::system_category()) : asio::error::eof;
    }
  }
  if (ec) return OnWritten(ec, close);
  WriteBytes(response_.splices[index].at, index + 1, close);
}

void Connection::OnWritten(const asio::error_code& ec, bool close) {
  in_flight_ = false;
  writing_ = false;
  response_ = {};
  if (closed_) return;
  if (ec) ++context_.counters->write_errors;
  if (ec || close || draining_) {
    Close(ec ? "write_error" : close ? "handler_close" : "drain");
    return;
  }
  ReadSize();
}

// The timer only runs while waiting for a frame; OnBody cancels it, and the
// handler holds the connection alive until it fires or is cancelled.
void Connection::ArmIdleTimer() {
  ArmTimer(&Connection::OnIdleTimer);
}

void Connection::ArmTimer(void (Connection::*on_expiry)(const asio::error_code&)) {
  if (context_.max_idle.count() < 0) return;  // never
  idle_timer_.expires_after(context_.max_idle);
  idle_timer_.async_wait([self = shared_from_this(), on_expiry](const asio::error_code& ec) {
    ((*self).*on_expiry)(ec);
  });
}

void Connection::OnIdleTimer(const asio::error_code& ec) {
  if (ec || closed_ || in_flight_ || muted_) return;
  ++context_.counters->closed_idle;
  Close("idle");
}

// Re-arming (expires_after) cancels the wait before; ArmIdleTimer, once the
// response is out, cancels this one.
void Connection::ArmWriteTimer() {
  write_progress_ = false;
  ArmTimer(&Connection::OnWriteTimer);
}

void Connection::OnWriteTimer(const asio::error_code& ec) {
  if (ec || closed_ || !writing_) return;
  if (write_progress_) return ArmWriteTimer();
  ++context_.counters->closed_idle;
  Close("idle_writing");
}

void Connection::Close(std::string_view reason) {
  if (closed_) return;
  closed_ = true;
  if (context_.log != nullptr && context_.log->Enabled(LogLevel::kDebug)) {
    LogFields f;
    f.Add("peer", peer_).Add("reason", reason).Add("requests", requests_);
    context_.log->Write(LogLevel::kDebug, "connection_closed", f);
  }
  MarkClientGone();
  idle_timer_.cancel();
  if (muted_) {
    muted_ = false;
    --context_.counters->connections_muted;
    // When Cancel fails the grant is already posted; it sees closed_ and
    // gives the bytes back.
    context_.memory->Cancel(ticket_);
  }
  // A frame being read is ours to free; one in flight is the handler's until
  // it responds (OnResponse frees it then).
  if (!in_flight_) ReleaseRequestMemory();
  asio::error_code ignored;
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
  --context_.counters->connections_active;
  if (on_closed_) on_closed_(this);
}

}  // namespace daruma::broker
