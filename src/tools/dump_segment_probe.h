// Reads the few batches of a segment's `.log` that `daruma dump` needs to
// verify an index entry, the way kafka-dump-log does (spec §12.2):
//  * an offset-index entry is compared with the last offset of the FIRST
//    batch found at its position, reading at most max_message_size bytes
//    (so a batch larger than that window counts as "no batch");
//  * a time-index entry is looked up by offset: scan from a position to the
//    first batch whose last offset >= the entry's offset, and take the
//    largest record timestamp of that batch (deep, decompressing).
// Bytes that do not form a whole entry end the scan, as Kafka's iterator does.
#pragma once

#include <cstdint>
#include <optional>

#include "common/file_system.h"
#include "common/status.h"

namespace daruma::tools {

// Last offset of the first entry starting at `position` within
// [position, position + window), or nullopt if there is none.
Result<std::optional<int64_t>> FirstBatchLastOffsetAt(const File& log, uint64_t position,
                                                      int64_t window);

struct ShallowBatchMatch {
  int64_t base_offset = 0;
  int64_t last_offset = 0;
  // Largest record timestamp in the batch (-1 when none or not decodable).
  int64_t max_record_timestamp = -1;
};

// The first entry at or after `position` whose last offset >= `target`.
Result<std::optional<ShallowBatchMatch>> FindBatchFrom(const File& log, uint64_t position,
                                                       int64_t target);

}  // namespace daruma::tools
