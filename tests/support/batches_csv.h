// Reader for the `batches.csv` files of fixtures/kafka-generated: one row per
// batch Kafka appended (see that folder's README for the columns).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace daruma::testing {

struct BatchesCsvRow {
  int64_t base_offset = 0;
  int64_t last_offset = 0;
  int64_t offset_count = 0;
  int64_t segment_base = 0;  // the segment whose .log holds the batch
  int64_t position = 0;      // byte position in that .log
  int64_t size = 0;          // batch size in bytes
  std::string compression;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  int32_t base_sequence = -1;
  bool is_transactional = false;
  bool is_control = false;
  int32_t leader_epoch = -1;
  int64_t max_timestamp = -1;
};

// Reads every row (the header line is skipped). A malformed row fails the
// current test.
std::vector<BatchesCsvRow> ReadBatchesCsv(const std::string& path);

}  // namespace daruma::testing
