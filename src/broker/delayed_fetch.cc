#include "broker/delayed_fetch.h"

#include <utility>

namespace daruma::broker {

// One parked fetch. `mu` serialises its attempts and guards the transition to
// `done`, which never goes back; `done` is atomic so the timer can skip a
// finished op without taking `mu`. `timer` is created, armed and cancelled on
// the timer executor only; destroying it (with the last reference to the op,
// on whatever thread) cancels a pending wait.
struct DelayedFetchPurgatory::Op {
  uint64_t id = 0;  // 0: never watched
  std::vector<TopicPartition> partitions;
  ClientScopePtr client;  // may be null
  Attempt attempt;
  std::mutex mu;
  std::atomic<bool> done{false};
  std::unique_ptr<asio::steady_timer> timer;
};

DelayedFetchPurgatory::DelayedFetchPurgatory(asio::any_io_executor timer_executor,
                                             asio::any_io_executor work_executor)
    : timer_executor_(std::move(timer_executor)), work_executor_(std::move(work_executor)) {}

DelayedFetchPurgatory::~DelayedFetchPurgatory() = default;

void DelayedFetchPurgatory::Park(const std::vector<TopicPartition>& partitions,
                                 std::chrono::milliseconds max_wait, ClientScopePtr client,
                                 Attempt attempt) {
  auto op = std::make_shared<Op>();
  op->partitions = partitions;
  op->client = std::move(client);
  op->attempt = std::move(attempt);
  bool watched = false;
  bool client_gone = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    client_gone = op->client != nullptr && op->client->gone;
    if (!closed_ && !client_gone) {
      op->id = ++next_id_;
      ops_.emplace(op->id, op);
      for (const TopicPartition& tp : partitions) by_partition_[tp].insert(op->id);
      if (op->client != nullptr) by_client_[op->client.get()].insert(op->id);
      watched = true;
    }
  }
  if (client_gone) ++completed_for_gone_;
  if (!watched) return ForceComplete(op);
  if (TryComplete(op)) return;
  ArmTimer(op, max_wait);
}

void DelayedFetchPurgatory::Wake(const TopicPartition& tp) {
  std::vector<std::shared_ptr<Op>> watching;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto p = by_partition_.find(tp);
    if (p == by_partition_.end()) return;
    for (uint64_t id : p->second) watching.push_back(ops_.at(id));
  }
  for (const std::shared_ptr<Op>& op : watching) TryComplete(op);
}

void DelayedFetchPurgatory::CompleteAll() {
  std::vector<std::shared_ptr<Op>> all;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
    for (auto& [id, op] : ops_) all.push_back(std::move(op));
    ops_.clear();
    by_partition_.clear();
    by_client_.clear();
  }
  for (const std::shared_ptr<Op>& op : all) ForceComplete(op);
}

void DelayedFetchPurgatory::CompleteFor(const ClientScopePtr& client) {
  std::vector<std::shared_ptr<Op>> theirs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto c = by_client_.find(client.get());
    if (c == by_client_.end()) return;
    for (uint64_t id : c->second) theirs.push_back(ops_.at(id));
  }
  for (std::shared_ptr<Op>& op : theirs) {
    ++completed_for_gone_;
    asio::post(work_executor_, [this, op = std::move(op)] { ForceComplete(op); });
  }
}

size_t DelayedFetchPurgatory::parked() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ops_.size();
}

bool DelayedFetchPurgatory::TryComplete(const std::shared_ptr<Op>& op) {
  std::lock_guard<std::mutex> lock(op->mu);
  if (op->done) return true;
  if (!op->attempt(false)) return false;
  op->done = true;
  Unwatch(*op);
  op->attempt = nullptr;  // releases the response path (and its connection) now
  return true;
}

void DelayedFetchPurgatory::ForceComplete(const std::shared_ptr<Op>& op) {
  std::lock_guard<std::mutex> lock(op->mu);
  if (op->done) return;
  op->done = true;
  Unwatch(*op);
  op->attempt(true);
  op->attempt = nullptr;
}

void DelayedFetchPurgatory::Unwatch(const Op& op) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = ops_.find(op.id);
  if (it == ops_.end() || it->second.get() != &op) return;
  ops_.erase(it);
  for (const TopicPartition& tp : op.partitions) {
    auto p = by_partition_.find(tp);
    if (p == by_partition_.end()) continue;
    p->second.erase(op.id);
    if (p->second.empty()) by_partition_.erase(p);
  }
  if (op.client == nullptr) return;
  auto c = by_client_.find(op.client.get());
  if (c == by_client_.end()) return;
  c->second.erase(op.id);
  if (c->second.empty()) by_client_.erase(c);
}

// The timer holds only a weak reference: a completed op is dropped from the
// indexes, and its destruction cancels the wait. An expiry runs the forced
// attempt on the work executor (a read), never on the timer's thread.
void DelayedFetchPurgatory::ArmTimer(const std::shared_ptr<Op>& op,
                                     std::chrono::milliseconds max_wait) {
  std::weak_ptr<Op> weak = op;
  asio::post(timer_executor_, [this, weak, max_wait] {
    std::shared_ptr<Op> op = weak.lock();
    if (op == nullptr || op->done) return;
    op->timer = std::make_unique<asio::steady_timer>(timer_executor_, max_wait);
    op->timer->async_wait([this, weak](const asio::error_code& ec) {
      if (ec) return;
      std::shared_ptr<Op> op = weak.lock();
      if (op == nullptr || op->done) return;
      asio::post(work_executor_, [this, op] { ForceComplete(op); });
    });
  });
}

}  // namespace daruma::broker
