// RequestMemoryPool: Kafka's `queued.max.request.bytes` — a bound on the bytes
// of requests being read or handled, summed over every connection.
//
// Kafka (SocketServer with a SimpleMemoryPool) reserves a request's declared
// size from the pool when its size field has been read; while the pool is
// exhausted, connections stop reading ("muted") and resume when a handled
// request gives its bytes back. Daruma does the same:
// - Reserve(n) succeeds while anything is left (reserved() < capacity), even
//   when n is more than what is left, as Kafka's non-strict pool does: a
//   request larger than the whole pool still gets read, just alone. Since a
//   reservation is the whole request, a connection that has one never needs
//   more, so reads always finish and nothing deadlocks.
// - Otherwise the caller waits in FIFO order; Release() grants waiters, oldest
//   first, while anything is left.
// - capacity <= 0 (Kafka's default -1): unbounded, every Reserve succeeds; the
//   reserved bytes are still counted for /metrics.
//
// The pool counts declared sizes; the memory a connection really holds grows
// with the bytes that arrive (connection.h), so a client that declares
// 100 MB and sends nothing holds a reservation but almost no memory.
//
// Thread safety: every method may be called from any thread. `on_grant` runs
// on the thread calling Release(), outside the pool's lock, with the bytes
// already reserved: whoever receives it must Release() them.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>

namespace daruma::broker {

class RequestMemoryPool {
 public:
  using OnGrant = std::function<void()>;
  using Ticket = uint64_t;

  explicit RequestMemoryPool(int64_t capacity) : capacity_(capacity) {}
  RequestMemoryPool(const RequestMemoryPool&) = delete;
  RequestMemoryPool& operator=(const RequestMemoryPool&) = delete;

  // True: `bytes` are reserved now and `on_grant` is dropped. False: the
  // caller waits; *ticket names its place for Cancel().
  bool Reserve(int64_t bytes, OnGrant on_grant, Ticket* ticket);
  // True when the waiter was still waiting (it will never be granted); false
  // when it has been granted already (its on_grant runs or ran: the bytes are
  // the caller's to release).
  bool Cancel(Ticket ticket);
  void Release(int64_t bytes);

  bool bounded() const { return capacity_ > 0; }
  int64_t capacity() const { return capacity_; }
  int64_t reserved() const;
  size_t waiting() const;

 private:
  struct Waiter {
    Ticket ticket;
    int64_t bytes;
    OnGrant on_grant;
  };
  bool HasRoom() const { return capacity_ <= 0 || reserved_ < capacity_; }

  const int64_t capacity_;
  mutable std::mutex mu_;
  int64_t reserved_ = 0;
  Ticket next_ticket_ = 1;
  std::deque<Waiter> waiters_;
};

}  // namespace daruma::broker
