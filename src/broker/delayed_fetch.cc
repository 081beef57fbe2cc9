#include "broker/delayed_fetch.h"

#include <cstdint>
#include <memory>
#include <utility>

namespace daruma::broker {
namespace {

DelayedOperationKey ClientKey(const ClientScopePtr& client) {
  return DelayedOperationKey::FetchClient(uint64_t(reinterpret_cast<uintptr_t>(client.get())));
}

// One parked fetch. Its attempt both reads and responds, so TryComplete
// that saw enough data has already answered: it records that and completes,
// and OnComplete answers (forced) only when nobody has yet. The purgatory
// runs both under the operation's mutex, so `responded_` needs no other lock.
// It holds its client, which keeps the client key's address unique.
class DelayedFetch final : public DelayedOperation {
 public:
  DelayedFetch(int64_t max_wait_ms, ClientScopePtr client, DelayedFetchPurgatory::Attempt attempt,
               std::atomic<int64_t>* completed_for_gone)
      : DelayedOperation(max_wait_ms),
        client_(std::move(client)),
        attempt_(std::move(attempt)),
        completed_for_gone_(completed_for_gone) {}

 protected:
  bool TryComplete() override {
    if (!attempt_(false)) return false;
    responded_ = true;
    return ForceComplete();
  }
  void OnComplete() override {
    if (!responded_) {
      if (client_ != nullptr && client_->gone) ++*completed_for_gone_;
      attempt_(true);
    }
    attempt_ = nullptr;  // releases the response path (and its connection) now
  }

 private:
  ClientScopePtr client_;  // may be null
  DelayedFetchPurgatory::Attempt attempt_;
  std::atomic<int64_t>* completed_for_gone_;
  bool responded_ = false;
};

}  // namespace

DelayedFetchPurgatory::DelayedFetchPurgatory(Scheduler* scheduler,
                                             DelayedOperationPurgatory::Runner run_forced)
    : purgatory_("delayed-fetch-expiry", scheduler, std::move(run_forced)) {}

void DelayedFetchPurgatory::Park(const std::vector<TopicPartition>& partitions,
                                 std::chrono::milliseconds max_wait, ClientScopePtr client,
                                 Attempt attempt) {
  if (client != nullptr && client->gone) {
    ++completed_for_gone_;
    attempt(true);
    return;
  }
  std::vector<DelayedOperationKey> keys;
  for (const TopicPartition& tp : partitions) {
    keys.push_back(DelayedOperationKey::FetchPartition(tp.topic, tp.partition));
  }
  if (client != nullptr) keys.push_back(ClientKey(client));
  auto op = std::make_shared<DelayedFetch>(int64_t(max_wait.count()), client, std::move(attempt),
                                           &completed_for_gone_);
  if (purgatory_.TryCompleteElseWatch(op, keys)) return;
  // The client may have gone between the check above and the watch, and
  // CompleteFor may have looked before the watch: force it here then.
  if (client != nullptr && client->gone) purgatory_.CompleteWatchers(ClientKey(client));
}

void DelayedFetchPurgatory::Wake(const TopicPartition& tp) {
  purgatory_.CheckAndComplete(DelayedOperationKey::FetchPartition(tp.topic, tp.partition));
}

void DelayedFetchPurgatory::CompleteAll() {
  purgatory_.CompleteAll();
}

void DelayedFetchPurgatory::CompleteFor(const ClientScopePtr& client) {
  purgatory_.CompleteWatchers(ClientKey(client));
}

}  // namespace daruma::broker
