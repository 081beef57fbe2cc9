// BrokerState: the life cycle of a `daruma serve` process, as /health and
// /metrics report it. Transitions only move forward:
//   kRecovering (HTTP up, LogManager::Startup running, Kafka port not bound)
//   -> kServing (Kafka port bound, requests handled)
//   -> kStopping (acceptor closed, in-flight requests finishing, then
//      LogManager::Shutdown: flush, checkpoints, clean-shutdown marker last).
// A stop requested while recovering goes straight to kStopping once recovery
// returns (recovery cannot be interrupted half way).
#pragma once

#include <string_view>

namespace daruma::broker {

enum class BrokerState { kRecovering, kServing, kStopping };

constexpr std::string_view BrokerStateName(BrokerState s) {
  switch (s) {
    case BrokerState::kRecovering:
      return "recovering";
    case BrokerState::kServing:
      return "serving";
    case BrokerState::kStopping:
      return "stopping";
  }
  return "unknown";
}

}  // namespace daruma::broker
