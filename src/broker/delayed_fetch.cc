#include "broker/delayed_fetch.h"

namespace daruma::broker {

DelayedFetchPurgatory::DelayedFetchPurgatory(asio::any_io_executor executor)
    : executor_(std::move(executor)) {}

DelayedFetchPurgatory::~DelayedFetchPurgatory() {
  for (auto& [id, op] : ops_) op->timer->cancel();
}

void DelayedFetchPurgatory::Park(const std::vector<TopicPartition>& partitions,
                                 std::chrono::milliseconds max_wait, Attempt attempt) {
  const uint64_t id = next_id_++;
  auto op = std::make_shared<Op>();
  op->partitions = partitions;
  op->attempt = std::move(attempt);
  op->timer = std::make_unique<asio::steady_timer>(executor_, max_wait);
  ops_.emplace(id, op);
  for (const TopicPartition& tp : partitions) by_partition_[tp].insert(id);
  op->timer->async_wait([this, id](const asio::error_code& ec) {
    if (ec != asio::error::operation_aborted) Expire(id);
  });
}

std::shared_ptr<DelayedFetchPurgatory::Op> DelayedFetchPurgatory::Remove(uint64_t id) {
  auto it = ops_.find(id);
  if (it == ops_.end()) return nullptr;
  std::shared_ptr<Op> op = it->second;
  ops_.erase(it);
  for (const TopicPartition& tp : op->partitions) {
    auto p = by_partition_.find(tp);
    if (p == by_partition_.end()) continue;
    p->second.erase(id);
    if (p->second.empty()) by_partition_.erase(p);
  }
  return op;
}

void DelayedFetchPurgatory::Expire(uint64_t id) {
  std::shared_ptr<Op> op = Remove(id);
  if (op) op->attempt(true);
}

void DelayedFetchPurgatory::Wake(const TopicPartition& tp) {
  auto p = by_partition_.find(tp);
  if (p == by_partition_.end()) return;
  // Attempts may park or complete other fetches: iterate over a copy.
  const std::set<uint64_t> ids = p->second;
  for (uint64_t id : ids) {
    auto it = ops_.find(id);
    if (it == ops_.end()) continue;
    std::shared_ptr<Op> op = it->second;
    if (!op->attempt(false)) continue;
    Remove(id);
    op->timer->cancel();
  }
}

void DelayedFetchPurgatory::CompleteAll() {
  while (!ops_.empty()) {
    std::shared_ptr<Op> op = Remove(ops_.begin()->first);
    op->timer->cancel();
    op->attempt(true);
  }
}

}  // namespace daruma::broker
