// PendingTopicCreation: a topic creation recorded before its partition
// directories are made (recovery/topic_config_file.h "creating"), so that a
// restart completes a creation a crash interrupted, as Kafka's metadata log
// makes a topic's creation one atomic record.
#pragma once

#include <cstdint>

#include "log/uuid.h"

namespace daruma {

struct PendingTopicCreation {
  Uuid id;
  int32_t partitions = 0;
  bool operator==(const PendingTopicCreation&) const = default;
};

}  // namespace daruma
