// The one table from the log layer's producer-state rejections
// (log/producer_append_info.h) to the wire errors Kafka answers with, for the
// broker's Produce and the coordinators' own transactional appends alike.
#pragma once

#include "log/producer_append_info.h"
#include "protocol/error_codes.h"

namespace daruma {

ErrorCode ErrorCodeForProducerAppend(ProducerAppendError error);

}  // namespace daruma
