#include "log/leader_epoch.h"

#include <vector>

namespace daruma {

int32_t LeaderEpochOf(const Log& log) {
  return log.latest_leader_epoch().value_or(0);
}

int32_t EpochAtOffset(const Log& log, int64_t offset) {
  int32_t epoch = -1;
  for (const EpochEntry& e : log.leader_epochs()) {
    if (e.second > offset) break;
    epoch = e.first;
  }
  return epoch;
}

}  // namespace daruma
